"""Memos for pure results.

`TextMemo`: a bounded, thread-safe memo for pure text results, so epochs that re-run a stage
over the same history (the proxy runs one per session every so often) do not redo the same
work. Keys must determine the result completely (e.g. a content hash of the input plus every
option that affects it); values are strings or None. The memo holds at most `max_chars`
characters of values (each entry counts `ENTRY_CHARS` more for its key) and drops the least
recently used first; a value longer than `max_value_chars` is not kept.

`PerObject`: a function's value computed once per object, for objects that do not change
(one run's messages and blocks, a request's texts).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

ENTRY_CHARS = 64

K = TypeVar("K")
V = TypeVar("V")


def _size(value: str | None) -> int:
    return ENTRY_CHARS + (len(value) if value is not None else 0)


class TextMemo:
    def __init__(self, max_chars: int, max_value_chars: int) -> None:
        self.max_chars = max_chars
        self.max_value_chars = max_value_chars
        self._values: OrderedDict[Hashable, str | None] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get_or_compute(self, key: Hashable, compute: Callable[[], str | None]) -> str | None:
        """The remembered value of `key`, or `compute()` (remembered if small enough)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = compute()
        if value is not None and len(value) > self.max_value_chars:
            return value
        size = _size(value)
        with self._lock:
            if key not in self._values:
                self._values[key] = value
                self._chars += size
                while self._chars > self.max_chars:
                    _, dropped = self._values.popitem(last=False)
                    self._chars -= _size(dropped)
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._chars = 0

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
