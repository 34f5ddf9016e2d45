"""Modelled prompt-cache cost and host compactions of a sequence of requests.

Caching as the engine prices it (`compress.provider_cache`): each request reads from cache the
longest earlier request that is an exact block prefix of it and ends within its last
LOOKBACK_BLOCKS blocks, and writes the rest; the system prompt and tools (the head) are read
once written. The model is incremental: each request costs time linear in its number of
blocks, with no re-counting.

Compactions: a 200K-window host compacts when the context crosses COMPACT_AT tokens and
continues from COMPACT_TO tokens; `compaction_events` counts that on a list of request sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from compress.provider_cache import LOOKBACK_BLOCKS, READ_PRICE, WRITE_PRICE

COMPACT_AT = 160_000
COMPACT_TO = 20_000


@dataclass(frozen=True, slots=True)
class CacheCost:
    """Tokens of one request read from and written to the cache."""

    read: int
    write: int

    @property
    def cost(self) -> float:
        return READ_PRICE * self.read + WRITE_PRICE * self.write


class PromptCache:
    """The cache state of one session. `add(keys, tokens, head_key, head_tokens)` prices the
    next request: `keys[i]` identifies content block i (equal keys = equal blocks), `tokens[i]`
    is its size."""

    def __init__(self, lookback: int = LOOKBACK_BLOCKS) -> None:
        self.lookback = lookback
        self._entries: set[int] = set()
        self._heads: set[object] = set()
        self._keys: list[int] = []
        self._chain: list[int] = [0]  # _chain[m]: identity of the first m blocks of the last request

    def _prefix_ids(self, keys: Sequence[int]) -> list[int]:
        same = 0
        limit = min(len(keys), len(self._keys))
        while same < limit and keys[same] == self._keys[same]:
            same += 1
        chain = self._chain[: same + 1]
        for key in keys[same:]:
            chain.append(hash((chain[-1], key)))
        self._keys, self._chain = list(keys), chain
        return chain

    def add(self, keys: Sequence[int], tokens: Sequence[int], head_key: object = None, head_tokens: int = 0) -> CacheCost:
        chain = self._prefix_ids(keys)
        n = len(keys)
        hit = 0
        for m in range(n, max(0, n - self.lookback), -1):
            if chain[m] in self._entries:
                hit = m
                break
        read = sum(tokens[:hit])
        write = sum(tokens[hit:])
        if head_key in self._heads:
            read += head_tokens
        else:
            write += head_tokens
            self._heads.add(head_key)
        if n:
            self._entries.add(chain[n])
        return CacheCost(read, write)


def compaction_events(sizes: Iterable[int], at: int = COMPACT_AT, to: int = COMPACT_TO) -> int:
    """How often a host compacting at `at` tokens back to `to` would compact: after each
    crossing the context counts from `to` plus whatever the requests grow by afterwards."""
    events = 0
    offset = 0
    for size in sizes:
        if size - offset >= at:
            events += 1
            offset = size - to
    return events
