"""Prices the requests of one side of a replay (raw, compressed, a peer) with the cost model.

A request is its head (system prompt, tools) plus its content blocks, `MESSAGE_OVERHEAD`
tokens per message on top; thinking blocks count where the provider still sends them: as the
request asks (`context_management` clearing thinking with `keep: "all"` keeps every turn's
thinking in the prefix), else only after the last person-written message
(`compress.provider_cache`); `thinking="all"` or `"latest"` overrides that. Blocks are counted once per distinct content (cached by message
object and by content hash), so a whole session costs time linear in its size per request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import xxhash

from compress.formats.requests import SHAPES, keeps_all_thinking
from compress.model import REDACTED_THINKING, THINKING, Message, last_person_index
from compress.provider_cache import sends_thinking
from compress.runner.message_tokens import MESSAGE_OVERHEAD, block_tokens
from compress.stagekit.memo import PerObject
from compress.token_counters import TokenCounter
from ground.jsonbytes import dumps
from replay.costmodel import ANTHROPIC, HOST_200K, CacheCost, Compaction, Prices, PromptCache, compaction_events
from replay.needed import Needed


@dataclass(frozen=True, slots=True)
class _MessageInfo:
    has_user_text: bool
    is_assistant: bool
    keys: tuple[int, ...]
    tokens: tuple[int, ...]
    thinking: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class Priced:
    tokens: int
    cache: CacheCost
    cost: float


THINKING_MODES = ("request", "all", "latest")


class RequestAccountant:
    """Prices the requests of one side (raw, compressed, a peer) of one session."""

    def __init__(self, provider: str, counter: TokenCounter, cache: dict | None = None,
                 prices: Prices = ANTHROPIC, thinking: str = "request") -> None:
        self.provider = provider
        self.field = SHAPES[provider].MESSAGES_FIELD
        self.head_fields = SHAPES[provider].HEAD_FIELDS
        self.parse = SHAPES[provider].parse_message
        self.count = counter.count
        self.prices = prices
        self.thinking = thinking
        self.cache = PromptCache(prices.lookback, prices.lifetime, prices.any_prefix)
        self.sizes: list[int] = []
        self._info = PerObject(self._info_by_content)
        self._by_content: dict[int, _MessageInfo] = cache if cache is not None else {}
        self._heads: dict[bytes, tuple[int, int]] = {}

    def _info_by_content(self, raw: Any) -> _MessageInfo:
        data = dumps(raw)
        digest = xxhash.xxh3_64_intdigest(data)
        info = self._by_content.get(digest)
        if info is None:
            info = self._measure(self.parse(raw), data)
            self._by_content[digest] = info
        return info

    def _measure(self, msg: Message, data: bytes) -> _MessageInfo:
        if not msg.blocks:
            keys: tuple[int, ...] = (xxhash.xxh3_64_intdigest(data),)
            tokens: tuple[int, ...] = (MESSAGE_OVERHEAD + self.count(data.decode("utf-8", "replace")),)
            return _MessageInfo(False, msg.role == "assistant", keys, tokens, (False,))
        keys = tuple(xxhash.xxh3_64_intdigest(dumps(b.raw if b.raw is not None else b.text)) for b in msg.blocks)
        counts = [block_tokens(b, self.count) for b in msg.blocks]
        thinking = tuple(b.kind in (THINKING, REDACTED_THINKING) for b in msg.blocks)
        counts[thinking.index(False) if False in thinking else 0] += MESSAGE_OVERHEAD
        return _MessageInfo(msg.has_user_text, msg.role == "assistant", keys, tuple(counts), thinking)

    def _head(self, body: dict) -> tuple[int, int]:
        data = dumps({k: body[k] for k in self.head_fields if k in body})
        head = self._heads.get(data)
        if head is None:
            head = (xxhash.xxh3_64_intdigest(data), self.count(data.decode()) if len(data) > 2 else 0)
            self._heads[data] = head
        return head

    def _keeps_all_thinking(self, body: dict) -> bool:
        return self.thinking == "all" or (self.thinking == "request" and keeps_all_thinking(self.provider, body))

    def message_tokens(self, message: Any) -> int:
        """Tokens of one provider-shaped message, thinking included."""
        return sum(self._info(message).tokens)

    def sent_blocks(self, body: dict) -> list[tuple[int, int, int]]:
        """(message index, block index, tokens) of each content block the provider is sent, in
        the order `add` prices them: the first `Priced.cache.read_blocks` are read from cache.
        A message without blocks counts as one (block index 0)."""
        where: list[tuple[int, int]] = []
        _, tokens = self._sent(body, where)
        return [(i, j, n) for (i, j), n in zip(where, tokens)]

    def _sent(self, body: dict, where: list[tuple[int, int]] | None = None) -> tuple[list[int], list[int]]:
        """Keys and tokens of the blocks sent; `where` gets each one's (message, block) index."""
        infos = [self._info(m) for m in body[self.field]]
        last_person = -1 if self._keeps_all_thinking(body) else last_person_index(infos)
        keys: list[int] = []
        tokens: list[int] = []
        for i, info in enumerate(infos):
            dropped = any(info.thinking) and not (info.is_assistant and sends_thinking(i, last_person))
            if not dropped and where is None:
                keys.extend(info.keys)
                tokens.extend(info.tokens)
                continue
            for j, (key, n, thinking) in enumerate(zip(info.keys, info.tokens, info.thinking)):
                if not (dropped and thinking):
                    keys.append(key)
                    tokens.append(n)
                    if where is not None:
                        where.append((i, j))
        return keys, tokens

    def add(self, body: dict, at: float | None = None) -> Priced:
        """Price the next request, sent at `at` (seconds; None: unknown)."""
        keys, tokens = self._sent(body)
        head_key, head_tokens = self._head(body)
        cost = self.cache.add(keys, tokens, head_key, head_tokens, at)
        total = head_tokens + sum(tokens)
        self.sizes.append(total)
        return Priced(total, cost, cost.cost(self.prices))


@dataclass
class SideStats:
    """Totals of one side of a replay; `effective_cost` adds the re-reads of needed lines it lost."""

    tokens_sum: int = 0
    tokens_peak: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    compactions: int = 0
    needed: Needed = field(default_factory=Needed)
    sizes: list[int] = field(default_factory=list)
    """Each request's tokens, in order (set by `finish`; the charts of `replay --html`)."""
    costs: list[float] = field(default_factory=list)
    """Each request's modelled cost, in order (what a session has cost so far, request by request)."""

    @property
    def effective_cost(self) -> float:
        return round(self.cost + self.needed.reread_cost, 1)

    def add(self, priced: Priced) -> None:
        self.tokens_sum += priced.tokens
        self.tokens_peak = max(self.tokens_peak, priced.tokens)
        self.cache_read += priced.cache.read
        self.cache_write += priced.cache.write
        self.cost += priced.cost
        self.costs.append(priced.cost)

    def finish(self, sizes: list[int], host: Compaction = HOST_200K) -> SideStats:
        """`sizes`: each request's tokens as the host sees them (plus any unseen head); `host`:
        where it compacts."""
        self.compactions = compaction_events(sizes, host)
        self.sizes = list(sizes)
        self.cost = round(self.cost, 1)
        return self
