"""A continuing session's identity from few bytes: most of a request is its last request's bytes.

`request_identity` parses the whole body (simdjson, lazily) to read a few fields; a 0.7 MB body
costs the event loop ~0.3-0.7 ms. `IdentityMemo.identify` remembers, for each recent request
whose conversation list is written compactly (Claude Code, Codex, OpenCode, orjson), where the
messages its identity reads end (`read_end`) and the ends of its last few messages, each with a
hash of the body's bytes up to it. A new body that has the same bytes up to one of those ends
(one hash of that prefix, no parse) has the same messages up to there, so the ones in between
(`read_end` to that end, the bulk of a long conversation) are cut out and only the rest is parsed:
the head, the messages the identity reads, what was appended, and the fields after the list.

Must hold (the tests check it on random bodies and histories): `identify(provider, raw, hint)`
is `request_identity(provider, raw)` for every `raw`, whatever was identified before and
whatever `hint` says; remembered prefixes only say where parsing can be skipped. Why:
- A remembered end is proved, never guessed: the body was parsed (whole, or as this cut of a
  valid body) and its list's bytes from `[` on are exactly simdjson's compact serialisation of
  the list (`Array.mini`), so each message ends where the serialisations' lengths say; messages
  appended after a cut are proved one by one the same way (`,` + their `mini`).
- Equal bytes up to an end `b`, that end a message's end in a valid body: the bytes between
  `read_end` and `b` are complete messages, each valid JSON, so cutting them out leaves a body
  that parses exactly when the whole does, with the same fields outside the list and the same
  messages up to `read_end`, which is all the identity reads (`document_identity` stops there).
- Equality is a 128-bit xxh3 of the prefix with a seed drawn per process. A body crafted to
  collide with another session's prefix needs that prefix's bytes (its first user message, its
  client id); whoever has those can already send them and get that key, so a collision gives
  nobody another session.
- Anything else (no remembered prefix matches, a parse that fails, a list not written
  compactly) takes the whole path, `request_identity`.
The memo holds hashes and offsets only (never a body), at most `MAX_SLOTS` slots of `PER_SLOT`
entries; it is used on the event loop only (no locks).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson
import simdjson
import xxhash

from compress.formats.requests import SHAPES
from ctxmill.proxy.identity import UNREADABLE, Identity, document_identity, mini, parse

HEAD_BYTES = 256
"""A body's slot is its first this many bytes (with its shape and the client's session header),
where the model and the opening fields are: requests of one conversation share them."""
ENDS = 3
"""Message ends remembered per request: its last few, since a client resends the last message
or two with their cache breakpoints moved (Claude Code marks the last message's last block)."""
PER_SLOT = 8
"""Entries tried per slot (most recent first): sessions whose first bytes are the same."""
MAX_SLOTS = 1024
_SEED = int.from_bytes(os.urandom(8), "little")
_ERRORS = (*UNREADABLE, IndexError, KeyError)


def _hasher() -> Any:
    return xxhash.xxh3_128(seed=_SEED)


@dataclass(frozen=True, slots=True)
class _Known:
    """What one request's bytes prove about its session's next request (see the module doc)."""

    identity: Identity
    stopped: int
    """Index of the message where the identity's reading stopped."""
    read_end: int
    """The byte after that message (its `}`), in the body."""
    read_hash: bytes
    ends: tuple[tuple[int, bytes], ...]
    """(end of a message at or after `stopped`, hash of the body's bytes up to it), ascending."""


class IdentityMemo:
    """`request_identity` that parses only what a request adds to a remembered one (module doc)."""

    def __init__(self) -> None:
        self._slots: OrderedDict[tuple[str, str, int], list[_Known]] = OrderedDict()
        self._unprovable: OrderedDict[tuple[str, str, int], None] = OrderedDict()
        """Slots whose request was not written compactly: not proved again (it costs a serialisation
        of the whole list, and such a client writes every request so)."""
        self.hits = self.misses = 0
        """Requests identified from a remembered prefix, and by the whole path."""

    def identify(self, provider: str, raw: bytes, hint: str = "") -> Identity:
        """`request_identity(provider, raw)`; `hint` (the client's session header, if any) only
        narrows which remembered requests are tried."""
        slot = (provider, hint, xxhash.xxh3_64_intdigest(raw[:HEAD_BYTES]))
        for entry in self._slots.get(slot, ()):
            try:
                found = _continued(SHAPES[provider], provider, raw, entry)
            except _ERRORS:
                break  # the whole path decides what such a body is
            if found is not None:
                self.hits += 1
                self._remember(slot, entry, found[1])
                return found[0]
        self.misses += 1
        prove = slot not in self._unprovable
        identity, known = _whole(SHAPES[provider], provider, raw, prove)
        if isinstance(known, _Known):
            self._remember(slot, None, known)
        elif prove and known is _NOT_COMPACT:
            self._unprovable[slot] = None
            if len(self._unprovable) > MAX_SLOTS:
                self._unprovable.popitem(last=False)
        return identity

    def _remember(self, slot: tuple[str, str, int], replaced: _Known | None, known: _Known) -> None:
        entries = [e for e in self._slots.pop(slot, []) if e is not replaced]
        self._slots[slot] = [known, *entries][:PER_SLOT]
        while len(self._slots) > MAX_SLOTS:
            self._slots.popitem(last=False)


def _continued(shape: Any, provider: str, raw: bytes, entry: _Known) -> tuple[Identity, _Known] | None:
    """The identity of `raw` if it has `entry`'s bytes up to `read_end` and up to one of its
    ends, and what `raw` proves for the next request; None when it does not."""
    view = memoryview(raw)
    hasher = _hasher()
    hasher.update(view[:entry.read_end])
    if hasher.digest() != entry.read_hash:
        return None
    cut, state, at = -1, None, entry.read_end
    for end, digest in entry.ends:
        if end >= len(raw):
            break
        hasher.update(view[at:end])
        at = end
        if hasher.digest() != digest:
            break
        cut, state = end, hasher.copy()
    if state is None:
        return None
    doc = parse(raw[:entry.read_end] + raw[cut:])
    identity, stopped = document_identity(shape, provider, doc)
    if identity.key is None or stopped != entry.stopped:  # cannot be (same bytes): the whole path decides
        return None
    ends = [(end, digest) for end, digest in entry.ends if end <= cut]
    at = cut
    for index, message in enumerate(doc.get(shape.MESSAGES_FIELD)):
        if index <= stopped:
            continue  # raw's messages after the cut come next, in order
        if not isinstance(message, (simdjson.Object, simdjson.Array)):
            break
        text = b"," + mini(message)
        if not raw.startswith(text, at):
            break  # not written as simdjson writes it: nothing more is proved
        state.update(text)
        at += len(text)
        ends.append((at, state.digest()))
    return identity, _Known(identity, stopped, entry.read_end, entry.read_hash, tuple(ends[-ENDS:]))


_NOT_COMPACT = object()
"""`_whole`'s proof when the request is not written as simdjson writes it."""


def _whole(shape: Any, provider: str, raw: bytes, prove: bool) -> tuple[Identity, Any]:
    """`request_identity(provider, raw)` from one parse, and, if `prove`, what `raw` proves for
    its session's next request: a `_Known`; `_NOT_COMPACT` when its fields up to the conversation
    list or the list itself are not written compactly; None when there is nothing to prove (no
    key, or its identity read to the list's end)."""
    try:
        doc = parse(raw)
        identity, stopped = document_identity(shape, provider, doc)
    except UNREADABLE:
        return Identity(None), None
    if not prove or identity.key is None or stopped < 0:
        return identity, None  # read to the end: a message appended later may name the folder
    try:
        known = _proved(shape, raw, doc, identity, stopped)
    except _ERRORS:
        known = None
    return identity, _NOT_COMPACT if known is None else known


def _proved(shape: Any, raw: bytes, doc: Any, identity: Identity, stopped: int) -> _Known | None:
    field = shape.MESSAGES_FIELD
    keys = [name.decode() if isinstance(name, bytes) else name for name in doc.keys()]
    if keys.count(field) != 1:
        return None
    head = [b"{"]
    for name in keys[:keys.index(field)]:
        head.append(orjson.dumps(name) + b":" + _text(doc[name]) + b",")
    head.append(orjson.dumps(field) + b":")
    opening = b"".join(head)
    messages = doc[field]
    listed = mini(messages)
    if not raw.startswith(opening) or not raw.startswith(listed, len(opening)):
        return None
    n = len(messages)
    first_end = max(stopped, n - ENDS)
    lengths = {}
    for index, message in enumerate(messages):
        if index <= stopped or index > first_end:
            if not isinstance(message, (simdjson.Object, simdjson.Array)):
                return None  # its length in `listed` is not known here
            lengths[index] = len(mini(message))
    read_end = len(opening) + 1 + sum(lengths[i] for i in range(stopped + 1)) + stopped
    ends_at = [len(opening) + len(listed) - 1]  # the last message's end, before `]`
    for index in range(n - 1, first_end, -1):
        ends_at.append(ends_at[-1] - 1 - lengths[index])
    view = memoryview(raw)
    hasher = _hasher()
    hasher.update(view[:read_end])
    read_hash, at = hasher.digest(), read_end
    ends = []
    for end in reversed(ends_at):
        hasher.update(view[at:end])
        at = end
        ends.append((end, hasher.digest()))
    return _Known(identity, stopped, read_end, read_hash, tuple(ends))


def _text(value: Any) -> bytes:
    """`value`'s compact JSON: simdjson's for objects and lists, orjson's for the rest."""
    return mini(value) if isinstance(value, (simdjson.Object, simdjson.Array)) else orjson.dumps(value)
