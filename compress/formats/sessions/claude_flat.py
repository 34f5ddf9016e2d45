"""The flat Claude format: one content block per line.

`{"timestamp", "role": "user|assistant|tool", "content": {"type": "text|thinking|tool_use|
tool_result", "text", "tool_id", "tool_name", "input", "output", "is_error"}}`. Consecutive
assistant lines are one model response; tool lines become tool_result blocks of a user message.
The format records no compaction boundary: a user text that opens like Claude Code's summary of a
compacted conversation (`compress.vocab.injections.COMPACTION_SUMMARY_OPENING`) is one, and the
history the host sent afterwards starts with it.
"""

from __future__ import annotations

from typing import Any

from compress.formats.sessions import builders as build
from compress.formats.sessions.transcript import Transcript, iter_jsonl
from compress.vocab.injections import COMPACTION_SUMMARY_OPENING

NAME = "claude-flat"
PROVIDER = "anthropic"


def sniff(sample: list[Any]) -> bool:
    return any(isinstance(x, dict) and x.get("role") in ("user", "assistant", "tool")
               and isinstance(x.get("content"), dict) and "type" in x["content"] for x in sample)


def _block(content: dict[str, Any]) -> dict[str, Any] | None:
    kind = content.get("type")
    if kind == "text" and isinstance(content.get("text"), str):
        return build.text_block(content["text"])
    if kind == "thinking":
        text = content.get("thinking", content.get("text"))
        return build.thinking_block(text) if isinstance(text, str) else None
    if kind == "tool_use" and isinstance(content.get("tool_id"), str):
        return build.tool_use_block(content["tool_id"], str(content.get("tool_name", "")), content.get("input"))
    if kind == "tool_result" and isinstance(content.get("tool_id"), str):
        return build.tool_result_block(content["tool_id"], build.as_text(content.get("output", content.get("content"))),
                                 content.get("is_error") is True)
    return None


def read(text: str) -> Transcript:
    transcript = Transcript(NAME, PROVIDER)
    builder = build.AnthropicBuilder(transcript)
    for line in iter_jsonl(text, transcript):
        role, content = line.get("role"), line.get("content")
        block = _block(content) if isinstance(content, dict) else None
        if role not in ("user", "assistant", "tool") or block is None:
            transcript.malformed += 1
            continue
        if role == "user" and block["type"] == "text" and block["text"].lstrip().startswith(COMPACTION_SUMMARY_OPENING):
            builder.compacted({"role": "user", "content": [block]})
            continue
        builder.add("assistant" if role == "assistant" else "user", block)
    return transcript
