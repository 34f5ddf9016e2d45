"""OpenAI Codex CLI rollout JSONL (`~/.codex/sessions/…/rollout-*.jsonl`).

`response_item` entries become an OpenAI Chat body: `message` (developer -> system-like
developer message, user, assistant), `function_call` / `custom_tool_call` -> `tool_calls`,
`*_output` -> `role: "tool"` messages. The session's base instructions become the first
message. `reasoning` items are encrypted or summaries the Chat shape cannot carry: they are
counted in `skipped`. Assistant items after a tool result or user message start a model call.
"""

from __future__ import annotations

from typing import Any

import orjson

from compress.formats.sessions.builders import OpenAIChatBuilder, as_text
from compress.formats.sessions.transcript import Transcript, iter_jsonl

NAME = "codex"
PROVIDER = "openai"
_KINDS = ("session_meta", "response_item", "event_msg", "turn_context")  # a tuple: values may be unhashable


def sniff(sample: list[Any]) -> bool:
    return any(isinstance(x, dict) and x.get("type") in _KINDS and isinstance(x.get("payload"), dict) for x in sample)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _output(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("content", value.get("output", value))
    return as_text(value)


def _item(builder: OpenAIChatBuilder, item: dict[str, Any], transcript: Transcript) -> None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role == "assistant":
            builder.assistant_text(_text(item.get("content")))
        elif role in ("user", "developer", "system"):
            builder.message(role, _text(item.get("content")))
        else:
            transcript.malformed += 1
    elif kind in ("function_call", "custom_tool_call") and isinstance(item.get("call_id"), str):
        arguments = item.get("arguments")
        if kind == "custom_tool_call":
            arguments = orjson.dumps({"input": as_text(item.get("input"))}).decode()
        builder.tool_call(item["call_id"], str(item.get("name", "")), arguments if isinstance(arguments, str) else "{}")
    elif kind in ("function_call_output", "custom_tool_call_output") and isinstance(item.get("call_id"), str):
        builder.tool_result(item["call_id"], _output(item.get("output")))
    else:
        transcript.skipped[str(kind)] += 1


def read(text: str) -> Transcript:
    transcript = Transcript(NAME, PROVIDER)
    builder = OpenAIChatBuilder(transcript)
    for line in iter_jsonl(text, transcript):
        payload = line.get("payload")
        if not isinstance(payload, dict):
            transcript.malformed += 1
            continue
        kind = line.get("type")
        if kind == "session_meta" and not transcript.messages:
            instructions = payload.get("base_instructions")
            text_value = instructions.get("text") if isinstance(instructions, dict) else instructions
            if isinstance(text_value, str) and text_value:
                builder.message("system", text_value)
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            transcript.head["model"] = payload["model"]
        elif kind == "response_item":
            _item(builder, payload, transcript)
        else:
            transcript.skipped[f"{kind}"] += 1
    return transcript
