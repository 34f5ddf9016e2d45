"""Parse and serialise only what a session's request appended: the worker keeps each session's
last request body and last compressed body with the byte spans of their conversation lists.

Clients append to the conversation, so a request's message list starts with the bytes of the
last one's (all of them, or all but the last few, whose cache breakpoints moved). `parse` finds
those bytes in the new request, parses the rest of the request with a placeholder in their
place, and puts the last request's parsed messages back in it; `serialise` writes the compressed
body with a placeholder for the messages rendered exactly as last time (the same objects) and
puts the last output's bytes for them back. Must hold, and is what the tests check:
- **Same values, same bytes**: `parse(raw, ...)` equals `orjson.loads(raw)` (key order and
  number types included) and `serialise(body, ...)` is `ground.jsonbytes.dumps(body)`, byte for
  byte, whatever was kept: the kept spans only say where the work can be skipped.
- **Proved, not guessed**: a kept span's bytes are exactly `b",".join(orjson.dumps(e) for e in
  its items)` (`Spans`, checked element by element when it is recorded), so they parse to those
  items and are those items' serialisation at any nesting depth that serialised them before; the
  placeholder is a string carrying a random per-process nonce no body can hold, found once, right
  after the list's opening bracket (so the span sat at the start of that very list).
- **Fail open to the full path**: any doubt (no span found, bytes that differ, a client that
  writes JSON another way than orjson, orjson refusing a value) gives today's whole `loads` /
  `dumps`; nothing raises that the full path would not raise.
- The pipeline never mutates a body or a rendered message in place (pure stages): the kept
  items are the very objects the last run read or returned, and an item is reused only while
  it is the same object (`is`), never a copy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import orjson

from compress.formats.requests import SHAPES, detect
from ground.jsonbytes import dumps

PLACEHOLDER = "ctxmill-reuse-" + os.urandom(16).hex()
"""Stands for the reused span while the rest is parsed or serialised; its nonce is drawn once per
process, so no request can contain it."""
_PLACEHOLDER_JSON = orjson.dumps(PLACEHOLDER)


@dataclass(frozen=True)
class Spans:
    """A JSON text `data` whose list at `start` (the byte after its `[`) begins with `items`, as
    far as verified: `data[start:ends[i]]` is `b",".join(orjson.dumps(e) for e in items[:i + 1])`
    for every i < len(ends)."""

    data: bytes
    items: list[Any]
    start: int
    ends: tuple[int, ...]

    def prefix(self, k: int) -> memoryview:
        """The bytes of the first `k` items (k >= 1, at most len(ends))."""
        return memoryview(self.data)[self.start:self.ends[k - 1]]


def extend(data: bytes, start: int, items: list[Any], ends: list[int]) -> Spans:
    """`Spans` of the list at `start` in `data`: `ends` already verified, then each further item
    as long as its orjson bytes are the next ones in `data`, followed by `,` or the list's `]`."""
    if ends and data[ends[-1]:ends[-1] + 1] != b",":
        return Spans(data, items, start, tuple(ends))  # the list ends there
    at = ends[-1] + 1 if ends else start
    try:
        for item in items[len(ends):]:
            piece = orjson.dumps(item)
            end = at + len(piece)
            after = data[end:end + 1]
            if after not in (b",", b"]") or not data.startswith(piece, at):
                break
            ends.append(end)
            if after == b"]":
                break
            at = end + 1
    except (TypeError, orjson.JSONEncodeError):  # a value orjson refuses: the spans stop before it
        pass
    return Spans(data, items, start, tuple(ends))


def list_start(data: bytes, field: str) -> int:
    """The byte after the `[` of the first `"field":[` in `data` (-1: none). It may be a nested
    one: whoever uses it proves it is the top-level list (the placeholder) or fails open."""
    token = orjson.dumps(field) + b":["
    at = data.find(token)
    return -1 if at < 0 else at + len(token)


def _field(body: Any) -> str | None:
    """The body's conversation field, when the body is an object with a list there."""
    if not isinstance(body, dict):
        return None
    try:
        field = SHAPES[detect(body)].MESSAGES_FIELD
    except Exception:  # noqa: BLE001 - a body the pipeline will refuse: nothing to keep
        return None
    return field if isinstance(body.get(field), list) else None


def _shared(data: bytes, at: int, last: Spans) -> int:
    """How many of `last`'s verified items begin the list at `at` in `data`, byte for byte, up
    to a `,` or `]` (0: none). Checks the whole prefix first (the client appended), then halves."""

    def starts(k: int) -> bool:
        span = last.prefix(k)
        end = at + len(span)
        return data.startswith(span, at) and data[end:end + 1] in (b",", b"]")

    n = len(last.ends)
    if n == 0 or not starts(1):
        return 0
    if starts(n):
        return n
    low, high = 1, n  # starts(low), not starts(high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if starts(mid) else (low, mid)
    return low


@dataclass(frozen=True)
class Kept:
    """What a session keeps of its last request (or compressed body) for the next one."""

    field: str
    spans: Spans


def _kept(field: str, spans: Spans) -> Kept | None:
    """What to keep: nothing when no item's bytes could be verified (a client writing JSON with
    spaces, or otherwise than orjson), so such a session holds no bytes for nothing."""
    return Kept(field, spans) if spans.ends else None


def parse(raw: bytes, last: Kept | None) -> tuple[Any, Kept | None]:
    """`orjson.loads(raw)` (its errors included) and what to keep for the next request.

    The short path is taken only for a request that is `orjson.dumps` of its own value, byte for
    byte: its messages are then the last request's objects, which the session's records also
    hold, so the pipeline may find nothing changed and send the original where a whole parse
    would have sent `dumps` of the same value; for such a request those are the same bytes."""
    if last is not None:
        try:
            spliced = _spliced(raw, last)
        except Exception:  # noqa: BLE001 - any doubt: the full parse below, which raises as it always did
            spliced = None
        if spliced is not None:
            return spliced
    body = orjson.loads(raw)
    field = _field(body)
    if field is None or (start := list_start(raw, field)) < 0:
        return body, None
    return body, _kept(field, extend(raw, start, body[field], []))


def _spliced(raw: bytes, last: Kept) -> tuple[Any, Kept] | None:
    field, spans = last.field, last.spans
    at = list_start(raw, field)
    k = _shared(raw, at, spans) if at >= 0 else 0
    if not k:
        return None
    skip = at + len(spans.prefix(k))
    outside = b"".join((memoryview(raw)[:at], _PLACEHOLDER_JSON, memoryview(raw)[skip:]))
    rest = orjson.loads(outside)
    tail = rest.get(field) if isinstance(rest, dict) else None
    if not isinstance(tail, list) or not tail or tail[0] != PLACEHOLDER or orjson.dumps(rest) != outside:
        return None  # (the last test: the request is orjson's own bytes, see `parse`)
    items = spans.items[:k] + tail[1:]
    rest[field] = items  # the same key, so the same place in the body's key order
    shift = at - spans.start
    return rest, Kept(field, extend(raw, at, items, [e + shift for e in spans.ends[:k]]))


def serialise(body: Any, last: Kept | None) -> tuple[bytes, Kept | None]:
    """`ground.jsonbytes.dumps(body)` and what to keep for the next compressed body."""
    field = _field(body)
    if field is None:
        return dumps(body), None
    items = body[field]
    if last is not None and last.field == field:
        kept = last.spans
        k = 0
        for new, old in zip(items, kept.items[:len(kept.ends)]):
            if new is not old:
                break
            k += 1
        if k and (spliced := _serialised(body, field, items, kept, k)) is not None:
            return spliced
    try:
        data = orjson.dumps(body)  # what `dumps` returns when orjson takes the body
    except (TypeError, orjson.JSONEncodeError):
        return dumps(body), None  # the stdlib's bytes: nothing kept (they are not orjson's)
    start = list_start(data, field)
    return data, (_kept(field, extend(data, start, items, [])) if start >= 0 else None)


def _serialised(body: dict, field: str, items: list[Any], kept: Spans, k: int) -> tuple[bytes, Kept] | None:
    try:
        skeleton = orjson.dumps({**body, field: [PLACEHOLDER, *items[k:]]})
    except (TypeError, orjson.JSONEncodeError):
        return None  # the full path decides (it may fall back to the stdlib)
    at = skeleton.find(b"[" + _PLACEHOLDER_JSON) + 1
    if at <= 0 or skeleton.count(_PLACEHOLDER_JSON) != 1:
        return None
    data = b"".join((memoryview(skeleton)[:at], kept.prefix(k), memoryview(skeleton)[at + len(_PLACEHOLDER_JSON):]))
    shift = at - kept.start
    return data, Kept(field, extend(data, at, items, [e + shift for e in kept.ends[:k]]))
