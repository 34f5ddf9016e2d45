"""Claude Code session JSONL from the shared corpus as one Anthropic request (the session at its peak).

Minimal on purpose: main-chain `user`/`assistant` lines in file order, the streamed pieces of
one assistant message (same `message.id`) merged, consecutive same-role messages merged so
roles alternate, tool_uses without a result dropped. Enough to measure stages on real data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.token_corpus import corpus_dir  # noqa: E402


def claude_code_files() -> list[Path]:
    root = corpus_dir()
    if root is None:
        return []
    return sorted((root / "transcripts" / "claude-code").glob("*.jsonl"))


def _blocks(content: object) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def session_request(path: Path, model: str = "claude-sonnet-4-5") -> dict:
    messages: list[dict] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("type") not in ("user", "assistant") or entry.get("isSidechain"):
            continue
        msg = entry.get("message") or {}
        role = msg.get("role")
        blocks = _blocks(msg.get("content"))
        if role not in ("user", "assistant") or not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})
    answered = {b.get("tool_use_id") for m in messages if m["role"] == "user" for b in m["content"]
                if b.get("type") == "tool_result"}
    used = {b.get("id") for m in messages if m["role"] == "assistant" for b in m["content"]
            if b.get("type") == "tool_use"}
    for m in messages:
        m["content"] = [b for b in m["content"]
                        if not (b.get("type") == "tool_use" and b.get("id") not in answered)
                        and not (b.get("type") == "tool_result" and b.get("tool_use_id") not in used)]
    messages = [m for m in messages if m["content"]]
    merged: list[dict] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"]:
            merged[-1]["content"].extend(m["content"])
        else:
            merged.append(m)
    if merged and merged[0]["role"] != "user":
        merged.insert(0, {"role": "user", "content": [{"type": "text", "text": "(session start)"}]})
    return {"model": model, "max_tokens": 4096, "messages": merged}
