"""Modelled prompt-cache cost and host compactions of a sequence of requests.

Each request reads from cache the longest earlier request that is an exact block prefix of it
(for Anthropic: ending within its last `Prices.lookback` blocks, the 20-block lookback of one
breakpoint on the last block; OpenAI looks up any earlier prefix, and before GPT-5.6 any prefix
of an earlier request is cached, not only its end: `Prices.any_prefix`) and writes the rest; the
system prompt and tools (the head) are read once written. When the requests' times are known,
a cached request unused for longer than the cache's lifetime (`compress.provider_cache.CacheLife`:
Anthropic's 5 minutes or an hour; OpenAI promises none) is gone, and so is the head. `Prices`
are per provider, in units of the base input price (`prices_for`); a request above the model's
long-context line (GPT-6: 272K tokens) costs twice as much. The model is incremental:
each request costs time linear in its number of blocks, with no re-counting.

Compactions: a host compacts when the context crosses COMPACT_AT_SHARE of the window its client
ran with (the one the engine is told: `replay.usage.client_window`, else the model table's,
`compress.tiers.known_window`, else a 200K window: 160K), or REPORTED_COMPACT_AT_SHARE of a window
the client reported (Codex's `model_context_window`: 232.6K of 258,400), and continues from
COMPACT_TO_SHARE of it (20K); `compaction_events` counts that on a list of request sizes. The
corpus's Claude Code sessions compacted at 155K-180K reported input tokens, its Codex ones at
230K-236K.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from compress.model_prices import listed_price
from compress.provider_cache import LIVES, LOOKBACK_BLOCKS, CacheLife, cache_life
from compress.tiers import REFERENCE_WINDOW, known_window

COMPACT_AT_SHARE = 0.8
REPORTED_COMPACT_AT_SHARE = 0.9
"""Codex auto-compacts at 90% of the window it reports (already 95% of the model's)."""
COMPACT_TO_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class Compaction:
    """Where a host compacts (`at` tokens) and what it continues from (`to`)."""

    at: int
    to: int

    @classmethod
    def for_model(cls, model: str, window: int | None = None, reported: bool = False) -> Compaction:
        """Where a host running `model` compacts, with the client's `window` (None: the model
        table's, else 200K); `reported`: the window is the one the client reported using."""
        window = window or known_window(model) or REFERENCE_WINDOW
        share = REPORTED_COMPACT_AT_SHARE if reported else COMPACT_AT_SHARE
        return cls(round(share * window), round(COMPACT_TO_SHARE * window))


HOST_200K = Compaction.for_model("")


@dataclass(frozen=True, slots=True)
class Prices:
    """What cached input costs, in units of the base input price."""

    name: str
    read: float
    write: float
    lookback: int | None
    """Blocks back from the end within which a cached prefix must end (None: anywhere)."""
    lifetime: float | None = None
    """Seconds a cached prefix lives unused (None: for good)."""
    long_context_above: int | None = None
    """Tokens above which a request's cache reads and writes cost twice as much (GPT-6: 272K)."""
    any_prefix: bool = False
    """Every prefix of an earlier request is cached, not only its end (OpenAI before GPT-5.6)."""


def _anthropic(life: CacheLife, label: str) -> Prices:
    return Prices(f"anthropic, {label} cache", life.read_price, life.write_price, LOOKBACK_BLOCKS, life.seconds)


LABELS = {"5m": "5-minute", "1h": "1-hour"}
ANTHROPIC = _anthropic(LIVES["5m"], LABELS["5m"])
ANTHROPIC_1H = _anthropic(LIVES["1h"], LABELS["1h"])


def prices_for(provider: str, model: str = "", cache_ttl: str = "5m") -> Prices:
    """The price model of a session, as the engine prices its requests (`cache_life`):
    Anthropic (5-minute or 1-hour cache writes) for its shape, else OpenAI's; cache reads and
    OpenAI's writes at the model's prices."""
    if provider == "anthropic":
        life = cache_life(provider, cache_ttl, model=model)
        return _anthropic(life, LABELS[life.name])
    life = cache_life(provider, None, model=model)
    listed = listed_price(model)
    return Prices(f"openai{f' {model}' if model else ''}", life.read_price, life.write_price, None,
                  long_context_above=listed.long_context_above if listed else None, any_prefix=life.any_prefix)


@dataclass(frozen=True, slots=True)
class CacheCost:
    """Tokens of one request read from and written to the cache."""

    read: int
    write: int
    read_blocks: int = 0
    """How many of the request's content blocks, from the first, were read from the cache."""

    def cost(self, prices: Prices = ANTHROPIC) -> float:
        cost = prices.read * self.read + prices.write * self.write
        long = prices.long_context_above is not None and self.read + self.write > prices.long_context_above
        return 2 * cost if long else cost


class PromptCache:
    """The cache state of one session. `add(keys, tokens, head_key, head_tokens, at)` prices the
    next request: `keys[i]` identifies content block i (equal keys = equal blocks), `tokens[i]`
    is its size, `at` when it was sent (None: unknown, nothing expires). `any_prefix`: a request
    caches every prefix of itself at a block boundary, not only its end."""

    def __init__(self, lookback: int | None = LOOKBACK_BLOCKS, lifetime: float | None = None,
                 any_prefix: bool = False) -> None:
        self.lookback = lookback
        self.lifetime = lifetime
        self.any_prefix = any_prefix
        self._entries: dict[int, float | None] = {}
        """Cached prefixes (chain ids: request ends, or with `any_prefix` every prefix) -> when
        they were last written or read (None: unknown)."""
        self._heads: dict[object, float | None] = {}
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

    def add(self, keys: Sequence[int], tokens: Sequence[int], head_key: object = None, head_tokens: int = 0,
            at: float | None = None) -> CacheCost:
        chain = self._prefix_ids(keys)
        n = len(keys)
        hit = 0
        for m in range(n, 0 if self.lookback is None else max(0, n - self.lookback), -1):
            if self._alive(self._entries, chain[m], at):
                hit = m
                self._entries[chain[m]] = at
                break
        read = sum(tokens[:hit])
        write = sum(tokens[hit:])
        if self._alive(self._heads, head_key, at):
            read += head_tokens
        else:
            write += head_tokens
        self._heads[head_key] = at
        for m in range(1, n + 1) if self.any_prefix else [n] if n else []:
            self._entries[chain[m]] = at
        return CacheCost(read, write, hit)

    def _alive(self, entries: dict, key: object, at: float | None) -> bool:
        """Whether `key` is still cached at `at`: it is in `entries` and was last used no longer
        than the lifetime ago (when either time is unknown, it is)."""
        if key not in entries:
            return False
        used = entries[key]
        return used is None or at is None or self.lifetime is None or at - used <= self.lifetime


def head_cost(tokens: int, times: Sequence[float | None], prices: Prices) -> float:
    """What a head of `tokens` (system prompt and tools) sent with requests at `times` costs: it
    is written by the first and whenever it went unused longer than the cache's lifetime, else
    read (`PromptCache`'s rule)."""
    cache = PromptCache(prices.lookback, prices.lifetime, prices.any_prefix)
    return sum(cache.add((), (), "head", tokens, at).cost(prices) for at in times)


def share_with_head(cost: float, raw: float, head: float) -> float:
    """A side's `cost` as a share of the `raw` side's, both counting the same `head_cost`."""
    return (cost + head) / (raw + head) if raw + head else 1.0


def compaction_events(sizes: Iterable[int], host: Compaction = HOST_200K) -> int:
    """How often a host compacting at `host.at` tokens back to `host.to` would compact: after each
    crossing the context counts from `to` plus whatever the requests grow by afterwards."""
    events = 0
    offset = 0
    for size in sizes:
        if size - offset >= host.at:
            events += 1
            offset = size - host.to
    return events
