"""The Anthropic Messages request shape <-> canonical model (and its response usage).

Must hold: `render_message(parse_message(raw)) == raw` for every message; an unchanged block
or message renders as the very object it was parsed from.
"""

from __future__ import annotations

from typing import Any

from compress.formats.requests.shape import Marks, render_text_block, token_count
from compress.model import (
    IMAGE,
    OTHER,
    REDACTED_THINKING,
    TEXT,
    THINKING,
    TOOL_RESULT,
    TOOL_USE,
    Block,
    Message,
)

NAME = "anthropic"
ENDPOINT = "/v1/messages"
VENDOR = "anthropic"
MESSAGES_FIELD = "messages"
SYSTEM_FIELD = "system"
STORED_HISTORY_FIELDS: tuple[str, ...] = ()
HEAD_FIELDS = ("system", "tools")
MARKS = Marks(body_keys=frozenset({"system", "anthropic_version"}),
              part_types=frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}))
CLEAR_THINKING = "clear_thinking_20251015"
CACHE_MARK = "cache_control"
_THINKING_TYPES = (THINKING, REDACTED_THINKING)
_USAGE_FIELDS = {"input": "input_tokens", "cache_read": "cache_read_input_tokens",
                 "cache_write": "cache_creation_input_tokens", "output": "output_tokens"}


def parse_block(item: Any) -> Block:
    if not isinstance(item, dict):
        return Block(OTHER, raw=item)
    kind = item.get("type")
    if kind == TEXT and isinstance(item.get("text"), str):
        return Block(TEXT, raw=item, text=item["text"])
    if kind == THINKING and isinstance(item.get("thinking"), str):
        return Block(THINKING, raw=item, text=item["thinking"])
    if kind == REDACTED_THINKING:
        return Block(REDACTED_THINKING, raw=item)
    if kind == TOOL_USE and isinstance(item.get("id"), str):
        value = item.get("input")
        return Block(TOOL_USE, raw=item, tool_id=item["id"], tool_name=str(item.get("name", "")),
                     input=value, source_input=value)
    if kind == TOOL_RESULT and isinstance(item.get("tool_use_id"), str):
        content = item.get("content")
        if isinstance(content, str):
            parts: tuple[Block, ...] = (Block(TEXT, raw=None, text=content),)
        elif isinstance(content, list):
            parts = tuple(parse_block(p) for p in content)
        else:
            parts = ()
        return Block(TOOL_RESULT, raw=item, tool_id=item["tool_use_id"], parts=parts,
                     is_error=item.get("is_error") is True)
    if kind == IMAGE:
        return Block(IMAGE, raw=item)
    return Block(OTHER, raw=item)


def render_block(block: Block) -> Any:
    raw = block.raw
    if block.kind == TEXT:
        return render_text_block(block)
    if block.kind == THINKING:
        return raw if block.text == raw["thinking"] else {**raw, "thinking": block.text}
    if block.kind == TOOL_USE:
        return raw if block.input is block.source_input else {**raw, "input": block.input}
    if block.kind == TOOL_RESULT:
        content = _render_result_content(block)
        return raw if content is raw.get("content") else {**raw, "content": content}
    return raw


def _render_result_content(block: Block) -> Any:
    original = block.raw.get("content")
    if isinstance(original, str) and len(block.parts) == 1 and block.parts[0].kind == TEXT:
        text = block.parts[0].text
        return original if text == original else text
    if not isinstance(original, list) and not block.parts:
        return original
    rendered = [render_block(p) for p in block.parts]
    if isinstance(original, list) and len(rendered) == len(original) and all(
        a is b for a, b in zip(rendered, original)
    ):
        return original
    return rendered


def parse_message(raw: Any) -> Message:
    if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
        return Message("other", (), raw)
    content = raw.get("content")
    if isinstance(content, str):
        return Message(raw["role"], (Block(TEXT, raw=None, text=content),), raw, content_is_str=True)
    if isinstance(content, list):
        return Message(raw["role"], tuple(parse_block(b) for b in content), raw)
    return Message(raw["role"], (), raw)


def render_message(msg: Message) -> Any:
    raw = msg.raw
    if msg.role == "other":
        return raw
    original = raw.get("content")
    if msg.content_is_str and len(msg.blocks) == 1 and msg.blocks[0].kind == TEXT:
        text = msg.blocks[0].text
        return raw if text == original else {**raw, "content": text}
    if not isinstance(original, (list, str)) and not msg.blocks:
        return raw
    rendered = [render_block(b) for b in msg.blocks]
    if isinstance(original, list) and len(rendered) == len(original) and all(
        a is b for a, b in zip(rendered, original)
    ):
        return raw
    return {**raw, "content": rendered}


def unmarked(raw: Any) -> Any:
    """The message without the `cache_control` fields of its content blocks (the very object when
    it has none). Clients move their cache breakpoint every request (Claude Code: onto the last
    block of the last message; OpenCode: of the last two), while the provider's cached prefix is
    the content alone, so a message is the same message with or without one."""
    content = raw.get("content") if isinstance(raw, dict) else None
    if not isinstance(content, list) or not any(isinstance(b, dict) and CACHE_MARK in b for b in content):
        return raw
    return {**raw, "content": [{k: v for k, v in b.items() if k != CACHE_MARK}
                               if isinstance(b, dict) and CACHE_MARK in b else b for b in content]}


def remarked(rendered: Any, client: Any) -> Any:
    """`rendered` (a rendering of `unmarked(client)`) with the client's cache breakpoints put back:
    the mark of the client's k-th block that is not thinking goes on the k-th such block of
    `rendered` (stages drop thinking blocks and append text blocks, never reorder; the API
    accepts no mark on thinking). Never a mark the client did not send in this request."""
    content = client.get("content") if isinstance(client, dict) else None
    if not isinstance(content, list) or not isinstance(rendered, dict) or not isinstance(rendered.get("content"), list):
        return rendered
    marks = [b.get(CACHE_MARK) if isinstance(b, dict) else None for b in content if not _is_thinking(b)]
    if not any(m is not None for m in marks):
        return rendered
    out, k = [], 0
    for b in rendered["content"]:
        if not _is_thinking(b):
            mark = marks[k] if k < len(marks) else None
            k += 1
            if mark is not None and isinstance(b, dict):
                b = {**b, CACHE_MARK: mark}
        out.append(b)
    return {**rendered, "content": out}


def _is_thinking(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in _THINKING_TYPES


def keeps_all_thinking(body: dict[str, Any]) -> bool:
    """The request asks the API to keep every earlier thinking block in context
    (`context_management.edits` holds `{"type": "clear_thinking_20251015", "keep": "all"}`, as
    Claude Code 2.1 sends): old thinking is then read by the model and cached, not dropped."""
    management = body.get("context_management")
    edits = management.get("edits") if isinstance(management, dict) else None
    return isinstance(edits, list) and any(
        isinstance(e, dict) and e.get("type") == CLEAR_THINKING and e.get("keep") == "all" for e in edits)


def keep_all_thinking() -> dict[str, Any]:
    """The request field that asks the API to keep every earlier thinking block (what
    `keeps_all_thinking` reads)."""
    return {"context_management": {"edits": [{"type": CLEAR_THINKING, "keep": "all"}]}}


def cache_ttl(body: dict[str, Any]) -> str | None:
    """The lifetime the request's cache breakpoints ask for: "1h" when a `cache_control` on its
    last messages, tools or system says `"ttl": "1h"` (Claude Code on a subscription, or with
    `ENABLE_PROMPT_CACHING_1H`), "5m" when they carry none (the API's default), None when the
    request sets no breakpoint. The breakpoints of the conversation come last and decide."""
    messages = body.get("messages")
    places = [m.get("content") for m in messages[-3:][::-1] if isinstance(m, dict)] if isinstance(messages, list) else []
    places += [body.get("tools"), body.get("system")]
    for place in places:
        marks = [b[CACHE_MARK] for b in place if isinstance(b, dict) and isinstance(b.get(CACHE_MARK), dict)] \
            if isinstance(place, list) else []
        if marks:
            return "1h" if any(m.get("ttl") == "1h" for m in marks) else "5m"
    return None


def usage_fields(event: dict[str, Any]) -> dict[str, int] | None:
    """Usage of a response body or stream event (`message_start` has it under `message`)."""
    message = event.get("message")
    objects = [raw for raw in (message.get("usage") if isinstance(message, dict) else None, event.get("usage"))
               if isinstance(raw, dict)]
    if not objects:
        return None
    fields = {}
    for raw in objects:
        for attr, name in _USAGE_FIELDS.items():
            if (n := token_count(raw.get(name))) is not None:
                fields[attr] = n
    return fields
