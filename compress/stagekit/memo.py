"""Memos for pure results.

`TextMemo`: a bounded, thread-safe memo for pure text results, so epochs that re-run a stage
over the same history (the proxy runs one per session every so often) do not redo the same
work. Keys must determine the result completely (e.g. a content hash of the input plus every
option that affects it); values are strings or None. Must hold: the bytes the memo accounts for
(`held_bytes`: each value's str object, `sys.getsizeof`, 1, 2 or 4 bytes a character as CPython
stores it, plus `ENTRY_BYTES` for its key and place) never exceed `max_bytes`, the least
recently used dropped first; a value of more than `max_value_bytes` is not kept; a memo returns
what `compute()` returns, whatever it holds (it is a cache: dropping entries never changes a
result).

Users: a long-lived process that serves many sessions (the proxy's worker) runs each session's
pipeline `used_by(session key)`; every entry such a run looks up or stores records that session as
one of its users, and `release(key)`, when the session leaves the process's memory, drops the
entries no other session it holds has used. Must hold: once every session that used an entry was
released, the entry is gone (so the memo holds only what the live sessions use, not the outputs
of the sessions that ended); an entry only ever used outside `used_by` (the CLI, hooks, replays,
which never release) stays until the bound drops it. Who used what is not in `held_bytes` (a set
of users per entry, ~0.4 KB; kept only for entries used within `used_by`).

`PerObject`: a function's value computed once per object, for objects that do not change
(one run's messages and blocks, a request's texts).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from typing import Generic, TypeVar

ENTRY_BYTES = 320
"""What an entry costs besides its value: its key (a tuple of a content hash or CCR key and the
options, ~230 bytes not shared with other entries) and its place in the ordered dict (~90 bytes),
measured on the memos after bench/proxy_growth.py's sessions."""

K = TypeVar("K")
V = TypeVar("V")

MEMO_BYTES = 16 * 2**20
"""The bound of each of the pipeline's text memos, per process (`output_cut.TRIMMED`,
`stage.REDACTED`): the trimmed outputs of about 30 sessions of 150K tokens (bench/proxy_growth.py
measured 0.55 MB of trimmed and 0.22 MB of redacted text per such session), what a proxy worker
re-decides at its sessions' epochs."""
MEMO_VALUE_BYTES = 2**20
"""A value larger than this is not kept (computed again each time): one output must not evict a
memo's worth of others."""


_USER: ContextVar[Hashable | None] = ContextVar("ctxmill_memo_user", default=None)
"""The session whose run is looking entries up (`used_by`); None: nobody releases them."""
_MEMOS: weakref.WeakSet[TextMemo] = weakref.WeakSet()
"""Every text memo of the process, for `release`."""


@contextlib.contextmanager
def used_by(user: Hashable) -> Iterator[None]:
    """Within it, the entries this thread's runs look up or store are used by `user` (see `release`)."""
    token = _USER.set(user)
    try:
        yield
    finally:
        _USER.reset(token)


def release(user: Hashable) -> int:
    """`user` has left: drop, from every text memo, the entries no other user has used since they
    were stored (an entry used outside `used_by` too goes with its last user); the bytes dropped."""
    return sum(memo.release(user) for memo in list(_MEMOS))


def _size(value: str | None) -> int:
    return ENTRY_BYTES + (sys.getsizeof(value) if value is not None else 0)


class TextMemo:
    def __init__(self, max_bytes: int, max_value_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_value_bytes = max_value_bytes
        self._values: OrderedDict[Hashable, str | None] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._users: dict[Hashable, set[Hashable]] = {}
        """Entry key -> the users (`used_by`) that looked it up or stored it, while it is held."""
        self._used: dict[Hashable, set[Hashable]] = {}
        """User -> the keys of the held entries it used (the same pairs as `_users`)."""
        self.hits = self.misses = 0
        """Lookups answered from the memo, and computed (what shows a warm memo answering)."""
        _MEMOS.add(self)

    def get_or_compute(self, key: Hashable, compute: Callable[[], str | None]) -> str | None:
        """The remembered value of `key`, or `compute()` (remembered if small enough)."""
        user = _USER.get()
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                self.hits += 1
                self._use(key, user)
                return self._values[key]
            self.misses += 1
        value = compute()
        size = _size(value)
        if size - ENTRY_BYTES > self.max_value_bytes:
            return value
        with self._lock:
            if key not in self._values:
                self._values[key] = value
                self._bytes += size
                while self._bytes > self.max_bytes:
                    self._drop(next(iter(self._values)))
            if key in self._values:
                self._use(key, user)
        return value

    def _use(self, key: Hashable, user: Hashable | None) -> None:
        if user is not None:
            self._users.setdefault(key, set()).add(user)
            self._used.setdefault(user, set()).add(key)

    def _drop(self, key: Hashable) -> None:
        """Forget a held entry and who used it (under the lock)."""
        self._bytes -= _size(self._values.pop(key))
        for user in self._users.pop(key, ()):
            used = self._used[user]
            used.discard(key)
            if not used:
                del self._used[user]

    def release(self, user: Hashable) -> int:
        """`user` has left: drop the entries it used that no other user has (see the module); the
        bytes dropped."""
        with self._lock:
            held = self._bytes
            for key in self._used.pop(user, ()):
                users = self._users[key]
                users.discard(user)
                if not users:
                    del self._users[key]
                    self._bytes -= _size(self._values.pop(key))
            return held - self._bytes

    def users(self) -> int:
        """How many users hold entries here (released ones not counted)."""
        return len(self._used)

    def held_bytes(self) -> int:
        """The bytes the memo accounts for now (at most `max_bytes`)."""
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._users.clear()
            self._used.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._values)


class PerObject(Generic[K, V]):
    """`fn(obj)`, remembered by object identity. The memo keeps each object alive, so its id
    is never reused for another object while the memo lives."""

    def __init__(self, fn: Callable[[K], V]) -> None:
        self._fn = fn
        self._seen: dict[int, tuple[K, V]] = {}

    def __call__(self, obj: K) -> V:
        seen = self._seen.get(id(obj))
        if seen is not None and seen[0] is obj:
            return seen[1]
        value = self._fn(obj)
        self._seen[id(obj)] = (obj, value)
        return value
