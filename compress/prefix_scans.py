"""Checkpoints of scans that read a request's messages from the first on, so a run of a live
session resumes such a scan where a previous run stopped instead of replaying the whole history.

Must hold:
- A pure memo: a scan resumed from a checkpoint gives exactly what a scan from the start gives.
  A checkpoint is used only for a list whose first messages are the very objects it was taken
  on (messages are immutable, and a long-lived process hands each run of a session the same
  parsed objects for the prefix it knows: `Session.parsed`); whatever else the scan reads is
  part of its key, or checked again by the scan when it resumes.
- Bounded and in memory only: at most `PER_KEY` checkpoints per key (least recently used
  dropped) and `MAX_KEYS` keys; they live in the session's memory (`Session.scans`) and are
  never written with its state, so a process that loads a session scans from the start once.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Sequence
from typing import Any

PER_KEY = 4
MAX_KEYS = 16

Entry = tuple[tuple[Any, ...], Any]
"""The messages a checkpoint was taken on, and the scan's state there."""


class PrefixScans:
    """Checkpoints by scan key, kept in `saved` (the session's `scans` dict)."""

    def __init__(self, saved: dict[Hashable, list[Entry]] | None = None) -> None:
        self._saved: dict[Hashable, list[Entry]] = {} if saved is None else saved

    def resume(self, key: Hashable, messages: Sequence[Any]) -> Any | None:
        """The state of the checkpoint under `key` taken on the longest prefix of `messages`
        (the very objects), or None."""
        entries = self._saved.get(key)
        if not entries:
            return None
        best = -1
        for k, (prefix, _) in enumerate(entries):
            if (len(prefix) <= len(messages) and (best < 0 or len(prefix) > len(entries[best][0]))
                    and all(map(operator.is_, prefix, messages))):
                best = k
        if best < 0:
            return None
        entries.append(entries.pop(best))
        return entries[-1][1]

    def store(self, key: Hashable, prefix: Sequence[Any], state: Any) -> None:
        """Remember `state`, the scan's state on `prefix` (a checkpoint on the same objects is replaced)."""
        prefix = tuple(prefix)
        if key not in self._saved and len(self._saved) >= MAX_KEYS:
            self._saved.clear()
        entries = self._saved.setdefault(key, [])
        entries[:] = [e for e in entries
                      if not (len(e[0]) == len(prefix) and all(map(operator.is_, e[0], prefix)))]
        entries.append((prefix, state))
        del entries[:-PER_KEY]
