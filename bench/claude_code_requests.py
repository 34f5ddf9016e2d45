"""A Claude Code session (JSONL) from the shared corpus as one Anthropic request at its peak.

Minimal reader for benchmarks and golden tests: keeps `user`/`assistant` lines that are not
sidechains, merges consecutive lines of the same role into one message (Claude Code writes
one line per content block), and drops empty messages. Not a general transcript importer.
"""

from __future__ import annotations

import json
from pathlib import Path


def _blocks(content: object) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def session_messages(path: Path) -> list[dict]:
    messages: list[dict] = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        message = item.get("message") if isinstance(item, dict) else None
        if item.get("isSidechain") or not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        blocks = _blocks(message.get("content"))
        if not blocks:
            continue
        if messages and messages[-1]["role"] == message["role"]:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": message["role"], "content": blocks})
    if messages and messages[-1]["role"] == "assistant":
        messages.pop()  # a request ends with the user's side
    return messages


def session_request(path: Path) -> dict:
    return {"model": "claude-sonnet-4", "max_tokens": 4096, "system": "", "messages": session_messages(path)}


def claude_code_sessions(root: Path) -> list[Path]:
    return sorted((root / "transcripts" / "claude-code").glob("*.jsonl"))
