"""What every request-shape module provides, and the helpers the shapes share.

A shape module (one per provider request shape, listed in `SHAPES` of this package) has:
- `NAME`: the provider name, as in `Request.provider`;
- `ENDPOINT`, `VENDOR`: the API path that takes this shape and whose API it is ("anthropic",
  "openai"; the proxy's upstream and error format);
- `MESSAGES_FIELD`: the body field holding the conversation;
- `SYSTEM_FIELD`: the body field holding the system prompt ('' when it is a message);
- `HEAD_FIELDS`: the other body fields the model reads as prompt (system prompt, tools), which
  the pipeline and the replay count but never change;
- `STORED_HISTORY_FIELDS`: body fields that, when set, continue a conversation the provider
  stores, so earlier messages are not in the body (`stored_history`); such a body passes
  through unchanged;
- `MARKS`: the `Marks` that tell its bodies from the other shapes' (see `detect`);
- `parse_message(raw) -> Message` and `render_message(msg) -> raw`, where
  `render_message(parse_message(raw)) == raw` and an unchanged message renders as `raw` itself;
- `usage_fields(event) -> dict | None`: the `Usage` fields one response body or stream event
  reports (None: it holds no usage object);
- optionally `unmarked(raw) -> raw` and `remarked(rendered, client_raw) -> raw`: a message
  without its cache breakpoints, and a rendering with the client's breakpoints put back
  (absent: messages carry none);
- optionally `keeps_all_thinking(body) -> bool`: the request asks the provider to keep every
  earlier thinking block (absent: False, the provider drops the thinking of completed turns);
- optionally `cache_ttl(body) -> str | None`: the lifetime ("5m", "1h") the request's cache
  breakpoints ask for (absent, or None: the provider's default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compress.model import TEXT, Block


@dataclass(frozen=True)
class Marks:
    """Signs that a body has this shape: a top-level key, a message role or key, a content part type."""

    body_keys: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    message_keys: frozenset[str] = frozenset()
    part_types: frozenset[str] = frozenset()


def parse_content(content: Any, parse_part: Callable[[Any], Block]) -> tuple[tuple[Block, ...], bool]:
    """The blocks of an OpenAI `content` (or `output`) field, each list part read by the shape's
    `parse_part`, and whether the field was a plain string (rendered back as one)."""
    if isinstance(content, str):
        return (Block(TEXT, raw=None, text=content),), True
    if isinstance(content, list):
        return tuple(parse_part(p) for p in content), False
    return (), False


def render_text_block(block: Block) -> Any:
    """A text block as a provider content part; `raw` is None for parts that were plain strings."""
    raw = block.raw
    if raw is None:
        return {"type": "text", "text": block.text}
    return raw if block.text == raw.get("text") else {**raw, "text": block.text}


def stored_history(shape: Any, body: Any) -> str:
    """Why earlier messages of `body`'s conversation are not in it (the provider stores them
    and the body names them: `STORED_HISTORY_FIELDS`), '' when they all are. `body` may be any
    mapping with `get` (the proxy passes a lazily parsed document)."""
    named = [f for f in shape.STORED_HISTORY_FIELDS if body.get(f)]
    return f"continues a conversation the provider stores ({named[0]}): the earlier messages are not in the body" \
        if named else ""


def token_count(value: Any) -> int | None:
    """A reported token count: a non-negative int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def openai_usage(prompt: Any, details: Any, output: Any) -> dict[str, int]:
    """An OpenAI usage report (Chat or Responses) as usage fields. The prompt count includes
    the tokens read from the cache (`cached_tokens`) and, from the GPT-5.6 family on, those
    written to it (`cache_write_tokens`); the rest is uncached input."""
    fields: dict[str, int] = {}
    prompt = token_count(prompt)
    details = details if isinstance(details, dict) else {}
    if prompt is not None:
        fields["cache_read"] = min(token_count(details.get("cached_tokens")) or 0, prompt)
        fields["cache_write"] = min(token_count(details.get("cache_write_tokens")) or 0, prompt - fields["cache_read"])
        fields["input"] = prompt - fields["cache_read"] - fields["cache_write"]
    if (n := token_count(output)) is not None:
        fields["output"] = n
    return fields
