"""Provider request shapes <-> the canonical model. Stages never see provider shapes.

`SHAPES` holds one module per shape (what each provides: `shape.py`), so a new shape is one
module and one entry there. `detect(body)` names a body's shape, `from_provider(body)` returns
the canonical `Request` and `to_provider(request)` renders it back. Must hold:
`to_provider(from_provider(body)) == body` for every body `from_provider` accepts, and
anything unknown passes through untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any

from compress.formats.requests import anthropic, openai_chat, openai_responses
from compress.model import TOOL_RESULT, Message, Request, index_tool_calls, number_turns, remember_tool_calls
from compress.prefix_scans import PrefixScans

SHAPES: dict[str, ModuleType] = {m.NAME: m for m in (anthropic, openai_chat, openai_responses)}
"""Provider name -> shape module, in detection order; the first is the default."""


class InvalidRequest(ValueError):
    """The body is not a request ctxmill can read (the message says why, in one line)."""


def detect(body: Any) -> str:
    """The provider whose shape `body` has: the first shape one of whose top-level keys it has;
    else the shape of the first message that has a role, key or content part type of one; else
    the default (plain user/assistant string chats read the same either way)."""
    marked = None
    if isinstance(body, dict):
        marked = next((s for s in SHAPES.values() if not s.MARKS.body_keys.isdisjoint(body)), None)
    default = next(iter(SHAPES.values()))
    messages = _messages(body, marked or default)
    if marked is not None:
        return marked.NAME
    for msg in messages:
        if (name := _marked_message(msg)) is not None:
            return name
    return default.NAME


def _marked_message(msg: Any) -> str | None:
    """The shape a message's role or keys point to, else the shape its content part types point to."""
    if not isinstance(msg, dict):
        return None
    role = msg.get("role")
    for shape in SHAPES.values():
        if (isinstance(role, str) and role in shape.MARKS.roles) or not shape.MARKS.message_keys.isdisjoint(msg):
            return shape.NAME
    content = msg.get("content")
    if isinstance(content, list):
        kinds = {p.get("type") for p in content if isinstance(p, dict) and isinstance(p.get("type"), str)}
        for shape in SHAPES.values():
            if not shape.MARKS.part_types.isdisjoint(kinds):
                return shape.NAME
    return None


def _messages(body: Any, shape: ModuleType) -> list[Any]:
    """The body's conversation in `shape` (InvalidRequest says why there is none)."""
    if not isinstance(body, dict):
        raise InvalidRequest(f"request body must be a JSON object, not {type(body).__name__}")
    messages = body.get(shape.MESSAGES_FIELD)
    if not isinstance(messages, list):
        got = "missing" if messages is None else type(messages).__name__
        raise InvalidRequest(f"`{shape.MESSAGES_FIELD}` must be a list ({got})")
    return messages


def from_provider(body: Any, provider: str | None = None, known: Sequence[Message] = (),
                  scans: PrefixScans | None = None) -> Request:
    """The canonical request. `known` may hold messages already parsed (by this function) from
    an identical prefix of the body's messages; they are reused and only the rest is parsed.
    `scans`: checkpoints of earlier indexes of tool calls (`compress.prefix_scans`; the session's)."""
    provider = provider or detect(body)
    if provider not in SHAPES:
        raise InvalidRequest(f"unknown provider {provider!r}")
    shape = SHAPES[provider]
    fresh = [shape.parse_message(m) for m in _messages(body, shape)[len(known):]]
    messages = number_turns([*known, *fresh], len(known))
    return Request(provider, _name_results(messages, len(known), scans), body)


def _name_results(messages: tuple[Message, ...], start: int = 0, scans: PrefixScans | None = None) -> tuple[Message, ...]:
    """Copy each tool_use's name onto its tool_result (from message `start` on), so stages
    know what produced a result. With `scans`, the index of the named messages is left as a
    checkpoint too (naming changes no call): they are what the session keeps for its next request."""
    calls = index_tool_calls(messages, scans, start)
    out = list(messages[:start])
    for msg in messages[start:]:
        blocks = tuple(
            replace(b, tool_name=calls[b.tool_id].name, call_input=_call_input(messages, calls[b.tool_id]))
            if b.kind == TOOL_RESULT and b.tool_id in calls and not b.tool_name
            else b
            for b in msg.blocks
        )
        out.append(msg.with_blocks(blocks))
    named = tuple(out)
    if scans is not None:  # naming moves no block and changes no id: the same index
        remember_tool_calls(scans, named, calls)
    return named


def _call_input(messages: tuple[Message, ...], call: Any) -> Any:
    return messages[call.use_msg].blocks[call.use_block].input


def unmarked_messages(provider: str, messages: list[Any]) -> list[Any]:
    """The messages without cache breakpoints (the very list when none has one): what the
    session hashes and the stages read, since clients move their breakpoints every request."""
    unmark = getattr(SHAPES[provider], "unmarked", None)
    if unmark is None:
        return messages
    plain = [unmark(m) for m in messages]
    return messages if all(a is b for a, b in zip(plain, messages)) else plain


def remarked_messages(provider: str, rendered: Sequence[Any], plain: Sequence[Any], client: Sequence[Any]) -> list[Any]:
    """The rendered messages with the client's cache breakpoints of this request put back; a
    message rendered unchanged is the client's own object."""
    remark = getattr(SHAPES[provider], "remarked", None)
    return [c if r is p else (remark(r, c) if remark is not None and p is not c else r)
            for r, p, c in zip(rendered, plain, client)]


def keeps_all_thinking(provider: str, body: Any) -> bool:
    """Whether the request keeps every earlier thinking block in context (see shape.py)."""
    keeps = getattr(SHAPES[provider], "keeps_all_thinking", None)
    return bool(keeps and isinstance(body, dict) and keeps(body))


def cache_ttl(provider: str, body: Any) -> str | None:
    """The cache lifetime the request's own breakpoints ask for ("5m", "1h"; see shape.py), or
    None when its shape has none or it sets no breakpoint."""
    ask = getattr(SHAPES[provider], "cache_ttl", None)
    return ask(body) if ask is not None and isinstance(body, dict) else None


def render_message(provider: str, msg: Message) -> Any:
    return SHAPES[provider].render_message(msg)


def to_provider(request: Request) -> dict:
    shape = SHAPES[request.provider]
    rendered = [shape.render_message(m) for m in request.messages]
    original = request.raw[shape.MESSAGES_FIELD]
    if len(rendered) == len(original) and all(a is b for a, b in zip(rendered, original)):
        return request.raw
    return {**request.raw, shape.MESSAGES_FIELD: rendered}
