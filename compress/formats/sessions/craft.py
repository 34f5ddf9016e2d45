"""Craft Agents session JSONL: line 1 is session metadata, then one item per line.

Items (`type`: user, assistant, tool, info, plan) are put in conversation order by their
`order` field (the file is not always in that order) and de-duplicated by `id`. A `tool` item
holds both the call (`toolName`, `toolUseId`, `toolInput`) and its result (`toolResult` or
`content`, `isError`). Assistant text opens a model call; tool calls whose ids share a stem
(`call_x_1`, `call_x_2`) are one parallel batch of the same call. `info` and `plan` items are
host UI, not context, except the `info` that reports a finished compaction (`statusType`
`compaction_complete`): the history the host sent afterwards starts there (the recording keeps
no summary).
"""

from __future__ import annotations

import re
from typing import Any

from compress.formats.sessions.builders import AnthropicBuilder, as_text, text_block, tool_result_block, tool_use_block
from compress.formats.sessions.transcript import Transcript, iter_jsonl

NAME = "craft"
PROVIDER = "anthropic"
_STEM = re.compile(r"_\d+$")


def sniff(sample: list[Any]) -> bool:
    first = sample[0] if sample else None
    if isinstance(first, dict) and ("sdkSessionId" in first or "workspaceRootPath" in first):
        return True
    return any(isinstance(x, dict) and x.get("type") == "tool" and "toolUseId" in x for x in sample)


def _items(lines: list[dict[str, Any]], transcript: Transcript) -> list[dict[str, Any]]:
    seen: set[str] = set()
    items = []
    for position, line in enumerate(lines):
        if "type" not in line or "content" not in line and "toolUseId" not in line:
            if position:  # line 1 is the session's metadata
                transcript.malformed += 1
            continue
        key = str(line.get("id", position))
        if key in seen:
            transcript.skipped["duplicate"] += 1
            continue
        seen.add(key)
        items.append(line)
    return sorted(items, key=lambda x: order if isinstance(order := x.get("order"), (int, float)) else 0)


def read(text: str) -> Transcript:
    transcript = Transcript(NAME, PROVIDER)
    lines = iter_jsonl(text, transcript)
    if lines and isinstance(lines[0].get("model"), str):
        transcript.head["model"] = lines[0]["model"]
    builder = AnthropicBuilder(transcript)
    batch = None  # stem of the tool batch of the current model call
    results: list[dict[str, Any]] = []
    for item in _items(lines, transcript):
        kind = item.get("type")
        if kind == "tool" and isinstance(item.get("toolUseId"), str):
            stem = _STEM.sub("", item["toolUseId"])
            if results and stem != batch:
                for block in results:
                    builder.add("user", block)
                results.clear()
            batch = stem
            builder.add("assistant", tool_use_block(item["toolUseId"], str(item.get("toolName", "")),
                                                    item.get("toolInput")))
            output = item.get("toolResult") or item.get("content")
            results.append(tool_result_block(item["toolUseId"], as_text(output), item.get("isError") is True))
            continue
        for block in results:
            builder.add("user", block)
        results.clear()
        batch = None
        if kind == "info" and item.get("statusType") == "compaction_complete":
            builder.compacted()
        elif kind in ("user", "assistant") and isinstance(item.get("content"), str):
            if kind == "assistant":
                builder.start_response()
            builder.add(kind, text_block(item["content"]))
        else:
            transcript.skipped[str(kind)] += 1
    for block in results:
        builder.add("user", block)
    return transcript
