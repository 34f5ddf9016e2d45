"""The OpenAI Chat Completions request shape <-> canonical model (and its response usage).

An assistant message becomes its text blocks followed by one tool_use block per entry of
`tool_calls`; a `role: "tool"` message becomes a message of role "tool" holding one
tool_result block. System and developer messages are kept as role "system" and never touched.
Must hold: `render_message(parse_message(raw)) == raw`; unchanged objects render as the
very objects they were parsed from.
"""

from __future__ import annotations

from typing import Any

import orjson

from compress.formats.requests.shape import Marks, openai_usage, parse_content, render_text_block
from compress.model import IMAGE, OTHER, TEXT, TOOL_RESULT, TOOL_USE, Block, Message

NAME = "openai"
ENDPOINT = "/v1/chat/completions"
VENDOR = "openai"
MESSAGES_FIELD = "messages"
SYSTEM_FIELD = ""
STORED_HISTORY_FIELDS: tuple[str, ...] = ()
HEAD_FIELDS = ("tools",)
MARKS = Marks(roles=frozenset({"tool", "system", "developer", "function"}), message_keys=frozenset({"tool_calls"}),
              part_types=frozenset({"image_url", "input_audio", "file", "refusal"}))


def _parse_part(part: Any) -> Block:
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return Block(TEXT, raw=part, text=part["text"])
    if isinstance(part, dict) and part.get("type") in ("image_url", "input_image"):
        return Block(IMAGE, raw=part)
    return Block(OTHER, raw=part)


def _render_content(original: Any, blocks: tuple[Block, ...] | list[Block]) -> Any:
    if isinstance(original, str) and len(blocks) == 1 and blocks[0].kind == TEXT:
        text = blocks[0].text
        return original if text == original else text
    if not isinstance(original, list) and not blocks:
        return original
    rendered = [render_text_block(b) if b.kind == TEXT else b.raw for b in blocks]
    if isinstance(original, list) and len(rendered) == len(original) and all(
        a is b for a, b in zip(rendered, original)
    ):
        return original
    return rendered


def _is_readable_call(call: Any) -> bool:
    return isinstance(call, dict) and isinstance(call.get("id"), str) and isinstance(call.get("function"), dict)


def _parse_tool_call(call: dict) -> Block:
    function = call["function"]
    arguments = function.get("arguments")
    value: Any = arguments
    if isinstance(arguments, str):
        try:
            value = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            value = arguments
    return Block(TOOL_USE, raw=call, tool_id=call["id"], tool_name=str(function.get("name", "")),
                 input=value, source_input=value)


def _render_tool_call(block: Block) -> Any:
    raw = block.raw
    if block.input is block.source_input:
        return raw
    arguments = block.input if isinstance(block.input, str) else orjson.dumps(block.input).decode()
    return {**raw, "function": {**raw["function"], "arguments": arguments}}


def parse_message(raw: Any) -> Message:
    role = raw.get("role") if isinstance(raw, dict) else None
    if role in ("system", "developer"):
        return Message("system", (), raw)
    if role == "tool" and isinstance(raw.get("tool_call_id"), str):
        parts, _ = parse_content(raw.get("content"), _parse_part)
        result = Block(TOOL_RESULT, raw=raw, tool_id=raw["tool_call_id"], parts=parts)
        return Message("tool", (result,), raw)
    if role == "user":
        blocks, is_str = parse_content(raw.get("content"), _parse_part)
        return Message("user", blocks, raw, content_is_str=is_str)
    if role == "assistant":
        blocks, is_str = parse_content(raw.get("content"), _parse_part)
        calls = raw.get("tool_calls")
        if isinstance(calls, list):
            if not all(_is_readable_call(c) for c in calls):
                return Message("other", (), raw)
            blocks += tuple(_parse_tool_call(c) for c in calls)
        return Message("assistant", blocks, raw, content_is_str=is_str)
    return Message("other", (), raw)


def render_message(msg: Message) -> Any:
    raw = msg.raw
    if msg.role in ("other", "system"):
        return raw
    if msg.role == "tool":
        result = msg.blocks[0]
        content = _render_content(raw.get("content"), result.parts)
        return raw if content is raw.get("content") else {**raw, "content": content}
    content = _render_content(raw.get("content"), [b for b in msg.blocks if b.kind != TOOL_USE])
    out = raw if content is raw.get("content") else {**raw, "content": content}
    calls = raw.get("tool_calls")
    if isinstance(calls, list):
        rendered = [_render_tool_call(b) for b in msg.blocks if b.kind == TOOL_USE]
        if len(rendered) != len(calls) or not all(a is b for a, b in zip(rendered, calls)):
            out = {**out, "tool_calls": rendered}
    return out



def usage_fields(event: dict[str, Any]) -> dict[str, int] | None:
    """Usage of a response body or its final stream chunk (`prompt_tokens`, its
    `prompt_tokens_details`, `completion_tokens`: `shape.openai_usage`)."""
    raw = event.get("usage")
    if not isinstance(raw, dict):
        return None
    return openai_usage(raw.get("prompt_tokens"), raw.get("prompt_tokens_details"), raw.get("completion_tokens"))
