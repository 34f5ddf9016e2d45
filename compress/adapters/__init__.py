"""Provider shapes <-> the canonical model. Stages never see provider shapes.

`from_provider(body)` detects Anthropic Messages or OpenAI Chat Completions and returns a
`Request`; `to_provider(request)` renders it back. Must hold:
`to_provider(from_provider(body)) == body` for every body `from_provider` accepts, and
anything unknown passes through untouched.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from compress.adapters import anthropic, openai
from compress.model import TOOL_RESULT, Message, Request, index_tool_calls, number_turns

PARSERS = {"anthropic": anthropic.parse_message, "openai": openai.parse_message}
RENDERERS = {"anthropic": anthropic.render_message, "openai": openai.render_message}

_OPENAI_ROLES = {"tool", "system", "developer", "function"}
_OPENAI_PARTS = {"image_url", "input_audio", "file", "refusal"}
_ANTHROPIC_PARTS = {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}


class InvalidRequest(ValueError):
    """The body is not a request ctxmill can read (the message says why, in one line)."""


def detect(body: Any) -> str:
    """'anthropic' or 'openai'; plain user/assistant string chats read the same either way."""
    if not isinstance(body, dict):
        raise InvalidRequest(f"request body must be a JSON object, not {type(body).__name__}")
    messages = body.get("messages")
    if not isinstance(messages, list):
        got = "missing" if messages is None else type(messages).__name__
        raise InvalidRequest(f"`messages` must be a list ({got})")
    if "system" in body or "anthropic_version" in body:
        return "anthropic"
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if (isinstance(role, str) and role in _OPENAI_ROLES) or "tool_calls" in msg:
            return "openai"
        content = msg.get("content")
        if isinstance(content, list):
            kinds = {p.get("type") for p in content if isinstance(p, dict) and isinstance(p.get("type"), str)}
            if kinds & _ANTHROPIC_PARTS:
                return "anthropic"
            if kinds & _OPENAI_PARTS:
                return "openai"
    return "anthropic"


def from_provider(body: Any, provider: str | None = None, known: Sequence[Message] = ()) -> Request:
    """The canonical request. `known` may hold messages already parsed (by this function) from
    an identical prefix of `body["messages"]`; they are reused and only the rest is parsed."""
    provider = provider or detect(body)
    if provider not in PARSERS:
        raise InvalidRequest(f"unknown provider {provider!r}")
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        detect(body)  # raises the precise reason
    parse = PARSERS[provider]
    fresh = [parse(m) for m in body["messages"][len(known):]]
    messages = number_turns([*known, *fresh])
    return Request(provider, _name_results(messages, start=len(known)), body)


def _name_results(messages: tuple[Message, ...], start: int = 0) -> tuple[Message, ...]:
    """Copy each tool_use's name onto its tool_result (from message `start` on), so stages
    know what produced a result."""
    calls = index_tool_calls(messages)
    out = list(messages[:start])
    for msg in messages[start:]:
        blocks = tuple(
            replace(b, tool_name=calls[b.tool_id].name, call_input=_call_input(messages, calls[b.tool_id]))
            if b.kind == TOOL_RESULT and b.tool_id in calls and not b.tool_name
            else b
            for b in msg.blocks
        )
        out.append(msg.with_blocks(blocks))
    return tuple(out)


def _call_input(messages: tuple[Message, ...], call: Any) -> Any:
    return messages[call.use_msg].blocks[call.use_block].input


def render_message(provider: str, msg: Message) -> Any:
    return RENDERERS[provider](msg)


def to_provider(request: Request) -> dict:
    rendered = [RENDERERS[request.provider](m) for m in request.messages]
    original = request.raw["messages"]
    if len(rendered) == len(original) and all(a is b for a, b in zip(rendered, original)):
        return request.raw
    return {**request.raw, "messages": rendered}
