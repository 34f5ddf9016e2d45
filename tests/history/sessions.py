"""Claude Code transcripts written for the history and distill tests (JSONL, as Claude Code 2.1 records them)."""

from __future__ import annotations

import json
from pathlib import Path


def line(i: int, role: str, content, session: str, cwd: str) -> dict:
    return {"type": role, "uuid": f"{session}-{i}", "parentUuid": f"{session}-{i - 1}" if i else None,
            "sessionId": session, "cwd": cwd, "message": {"role": role, "content": content,
                                                          **({"id": f"m{i}"} if role == "assistant" else {})}}


def exchange(texts: list[str], commands: list[str] = ()) -> list[tuple[str, object]]:
    """A person's texts answered by the agent, then each command run with Bash and its result."""
    out: list[tuple[str, object]] = []
    for text in texts:
        out += [("user", text), ("assistant", [{"type": "text", "text": "Noted."}])]
    for n, command in enumerate(commands):
        out += [("assistant", [{"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": command}}]),
                ("user", [{"type": "tool_result", "tool_use_id": f"t{n}", "content": f"ran {command}"}])]
    return out


def write_session(folder: Path, session: str, items: list[tuple[str, object]], cwd: str = "/work/proj") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    path.write_text("".join(json.dumps(line(i, role, content, session, cwd)) + "\n"
                            for i, (role, content) in enumerate(items)))
    return path
