"""Modelled prompt-cache cost and host compactions of a sequence of requests.

Each request reads from cache the longest earlier request that is an exact block prefix of it
(for Anthropic: ending within its last `Prices.lookback` blocks, the 20-block lookback of one
breakpoint on the last block; OpenAI looks up any earlier prefix) and writes the rest; the
system prompt and tools (the head) are read once written. `Prices` are per provider, in units
of the base input price (`prices_for`). The model is incremental: each request costs time
linear in its number of blocks, with no re-counting.

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
class Prices:
    """What cached input costs, in units of the base input price."""

    name: str
    read: float
    write: float
    lookback: int | None
    """Blocks back from the end within which a cached prefix must end (None: anywhere)."""


ANTHROPIC = Prices("anthropic, 5-minute cache", READ_PRICE, WRITE_PRICE, LOOKBACK_BLOCKS)
ANTHROPIC_1H = Prices("anthropic, 1-hour cache", READ_PRICE, 2.0, LOOKBACK_BLOCKS)
OPENAI_READ = (("gpt-5", 0.1), ("o3", 0.25), ("o4", 0.25), ("gpt-4.1", 0.25), ("codex", 0.25), ("gpt-4o", 0.5))
"""OpenAI cached-input price by model-name prefix (first match); other models: 0.5. No write premium."""


def prices_for(provider: str, model: str = "", cache_ttl: str = "5m") -> Prices:
    """The price model of a session: Anthropic (5-minute or 1-hour cache writes) for its shape,
    else OpenAI's, whose cached-input discount depends on the model."""
    if provider == "anthropic":
        return ANTHROPIC_1H if cache_ttl == "1h" else ANTHROPIC
    low = model.lower()
    read = next((price for prefix, price in OPENAI_READ if low.startswith(prefix)), 0.5)
    return Prices(f"openai{f' {model}' if model else ''}", read, 1.0, None)


@dataclass(frozen=True, slots=True)
class CacheCost:
    """Tokens of one request read from and written to the cache."""

    read: int
    write: int
    read_blocks: int = 0
    """How many of the request's content blocks, from the first, were read from the cache."""

    def cost(self, prices: Prices = ANTHROPIC) -> float:
        return prices.read * self.read + prices.write * self.write


class PromptCache:
    """The cache state of one session. `add(keys, tokens, head_key, head_tokens)` prices the
    next request: `keys[i]` identifies content block i (equal keys = equal blocks), `tokens[i]`
    is its size."""

    def __init__(self, lookback: int | None = LOOKBACK_BLOCKS) -> None:
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
        for m in range(n, 0 if self.lookback is None else max(0, n - self.lookback), -1):
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
        return CacheCost(read, write, hit)


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
