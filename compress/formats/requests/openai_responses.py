"""The OpenAI Responses request shape (`POST /v1/responses`, what Codex sends) <-> canonical model.

The conversation is `input`, a list of items; each item is one canonical message:
- `message` items (also the type-less `{"role", "content"}` form): roles user and assistant
  become those roles with their text parts (`input_text`, `output_text`) as text blocks and
  `input_image` as image blocks; system and developer messages become role "system" and are
  never touched;
- calls become an assistant message with one tool_use block whose id is the `call_id`:
  `function_call` (input: the parsed `arguments` JSON string), `custom_tool_call` (Codex's
  freeform apply_patch; input `{"input": <text>}`), `local_shell_call` (name "local_shell",
  input: its `action`);
- `*_call_output` items with a `call_id` become a role "tool" message with one tool_result
  (its `output` text, or the text and image parts of a list output);
- `reasoning` items become an assistant message with one opaque (redacted_thinking) block: the
  provider needs `encrypted_content` verbatim, so no stage ever changes the item;
- anything else (web_search_call, item_reference, compaction, …) is role "other", untouched.

A run of consecutive assistant items is one model reply (`compress.model.number_turns`).
A body with `previous_response_id` or `conversation` continues a conversation the provider
stores: only the new items are in it (`STORED_HISTORY_FIELDS`).
Must hold: `render_message(parse_message(raw)) == raw`; unchanged objects render as the very
objects they were parsed from; text parts a stage adds get the item's own part type.
"""

from __future__ import annotations

from typing import Any

import orjson

from compress.formats.requests.shape import Marks, openai_usage, parse_content
from compress.model import IMAGE, OTHER, REDACTED_THINKING, TEXT, TOOL_RESULT, TOOL_USE, Block, Message

NAME = "openai-responses"
ENDPOINT = "/v1/responses"
VENDOR = "openai"
MESSAGES_FIELD = "input"
SYSTEM_FIELD = "instructions"
HEAD_FIELDS = ("instructions", "tools")
STORED_HISTORY_FIELDS = ("previous_response_id", "conversation")
MARKS = Marks(body_keys=frozenset({"input", "previous_response_id"}))

_TEXT_PARTS = ("input_text", "output_text", "text")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
LOCAL_SHELL = "local_shell"
"""The tool name of a `local_shell_call` (the item names no tool)."""


# -- parsing ----------------------------------------------------------------------------------


def _parse_part(part: Any) -> Block:
    if isinstance(part, dict):
        kind = part.get("type")
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            return Block(TEXT, raw=part, text=part["text"])
        if kind == "input_image":
            return Block(IMAGE, raw=part)
    return Block(OTHER, raw=part)


def _arguments(text: Any) -> Any:
    if isinstance(text, str):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    return text


def _call(raw: dict) -> Block | None:
    """The tool_use block of a call item, None when the item is not a readable call."""
    kind, call_id = raw.get("type"), raw.get("call_id")
    if not isinstance(call_id, str):
        return None
    if kind == "function_call":
        value = _arguments(raw.get("arguments"))
        name = str(raw.get("name", ""))
    elif kind == "custom_tool_call" and isinstance(raw.get("input"), str):
        value, name = {"input": raw["input"]}, str(raw.get("name", ""))
    elif kind == "local_shell_call" and isinstance(raw.get("action"), dict):
        value, name = raw["action"], LOCAL_SHELL
    else:
        return None
    return Block(TOOL_USE, raw=raw, tool_id=call_id, tool_name=name, input=value, source_input=value)


def parse_message(raw: Any) -> Message:
    if not isinstance(raw, dict):
        return Message("other", (), raw)
    kind = raw.get("type")
    if kind == "message" or (kind is None and "role" in raw):
        role = raw.get("role")
        if role in ("system", "developer"):
            return Message("system", (), raw)
        if role in ("user", "assistant"):
            blocks, is_str = parse_content(raw.get("content"), _parse_part)
            return Message(role, blocks, raw, content_is_str=is_str)
        return Message("other", (), raw)
    if kind == "reasoning":
        return Message("assistant", (Block(REDACTED_THINKING, raw=raw),), raw)
    if kind in _OUTPUTS and isinstance(raw.get("call_id"), str):
        parts, _ = parse_content(raw.get("output"), _parse_part)
        return Message("tool", (Block(TOOL_RESULT, raw=raw, tool_id=raw["call_id"], parts=parts),), raw)
    call = _call(raw)
    if call is not None:
        return Message("assistant", (call,), raw)
    return Message("other", (), raw)


# -- rendering --------------------------------------------------------------------------------


def _render_part(block: Block, text_type: str, given: set[int]) -> Any:
    """A content part. A text part the item did not have (`given`: ids of its parts; a stage
    added it, or made a plain string a list) is a `text_type` part."""
    if block.kind != TEXT:
        return block.raw
    raw = block.raw
    if raw is None or id(raw) not in given:
        return {"type": text_type, "text": block.text}
    return raw if block.text == raw.get("text") else {**raw, "text": block.text}


def _render_content(original: Any, blocks: tuple[Block, ...], text_type: str) -> Any:
    if isinstance(original, str) and len(blocks) == 1 and blocks[0].kind == TEXT:
        text = blocks[0].text
        return original if text == original else text
    if not isinstance(original, list) and not blocks:
        return original
    given = {id(p) for p in original} if isinstance(original, list) else set()
    rendered = [_render_part(b, text_type, given) for b in blocks]
    if isinstance(original, list) and len(rendered) == len(original) and all(
        a is b for a, b in zip(rendered, original)
    ):
        return original
    return rendered


def _render_call(block: Block) -> Any:
    raw = block.raw
    if block.input is block.source_input:
        return raw
    kind = raw["type"]
    if kind == "custom_tool_call":
        value = block.input.get("input") if isinstance(block.input, dict) else block.input
        return {**raw, "input": value if isinstance(value, str) else orjson.dumps(block.input).decode()}
    if kind == "local_shell_call":
        return {**raw, "action": block.input}
    arguments = block.input if isinstance(block.input, str) else orjson.dumps(block.input).decode()
    return {**raw, "arguments": arguments}


def render_message(msg: Message) -> Any:
    raw = msg.raw
    if msg.role in ("other", "system"):
        return raw
    first = msg.blocks[0] if msg.blocks else None
    if first is not None and first.raw is raw:  # a call, a reasoning item or a tool output
        if first.kind == TOOL_USE:
            return _render_call(first)
        if first.kind == TOOL_RESULT:
            output = _render_content(raw.get("output"), first.parts, "input_text")
            return raw if output is raw.get("output") else {**raw, "output": output}
        return raw
    text_type = "output_text" if msg.role == "assistant" else "input_text"
    content = _render_content(raw.get("content"), msg.blocks, text_type)
    return raw if content is raw.get("content") else {**raw, "content": content}


def usage_fields(event: dict[str, Any]) -> dict[str, int] | None:
    """Usage of a response body, or of a stream event that carries the response
    (`response.completed` / `response.incomplete` / `response.failed`): `input_tokens`, its
    `input_tokens_details`, `output_tokens` (`shape.openai_usage`)."""
    response = event.get("response")
    raw = (response if isinstance(response, dict) else event).get("usage")
    if not isinstance(raw, dict):
        return None
    return openai_usage(raw.get("input_tokens"), raw.get("input_tokens_details"), raw.get("output_tokens"))
