"""A Claude Code session JSONL as one Anthropic Messages request (the session at its end).

Minimal on purpose: main-chain `user` / `assistant` lines only (no sidechains), consecutive
lines of one role merged into one message (Claude Code writes one content block per line),
tool_results without a known tool_use dropped. Good enough to measure compression; it is not
a faithful replay of what Claude Code sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.token_corpus import corpus_dir


def claude_code_sessions() -> list[Path]:
    """The claude-code transcripts of the shared corpus ([] when it is absent)."""
    root = corpus_dir()
    return sorted((root / "transcripts" / "claude-code").glob("*.jsonl")) if root else []


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def load_request(path: Path, max_messages: int | None = None) -> dict:
    messages: list[dict] = []
    seen_uses: set[str] = set()
    model = ""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        if record.get("type") not in ("user", "assistant") or record.get("isSidechain") or not isinstance(message, dict):
            continue
        role = message.get("role")
        model = model or (message.get("model") or "")
        blocks = []
        for block in _blocks(message.get("content")):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                seen_uses.add(block.get("id"))
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in seen_uses:
                continue
            blocks.append(block)
        if role not in ("user", "assistant") or not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    if max_messages is not None:
        messages = messages[:max_messages]
    return {"model": model or "claude-sonnet-4-5", "max_tokens": 8192, "messages": messages}
