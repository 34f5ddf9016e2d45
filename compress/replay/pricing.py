"""Prices the requests of one side of a replay (raw, compressed, a peer) with the cost model.

A request is its head (system prompt, tools) plus its content blocks, `MESSAGE_OVERHEAD`
tokens per message on top; thinking blocks count only where the provider still sends them
(`compress.provider_cache`). Blocks are counted once per distinct content (cached by message
object and by content hash), so a whole session costs time linear in its size per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import xxhash

from compress.formats.requests import SHAPES
from compress.memo import PerObject
from compress.message_tokens import MESSAGE_OVERHEAD, block_tokens
from compress.model import REDACTED_THINKING, THINKING, Message, last_person_index
from compress.provider_cache import sends_thinking
from compress.replay.costmodel import CacheCost, PromptCache, compaction_events
from compress.tokens import TokenCounter
from ground.jsonbytes import dumps


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


class RequestAccountant:
    """Prices the requests of one side (raw, compressed, a peer) of one session."""

    def __init__(self, provider: str, counter: TokenCounter, cache: dict | None = None) -> None:
        self.parse = SHAPES[provider].parse_message
        self.count = counter.count
        self.cache = PromptCache()
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
        data = dumps({k: body[k] for k in ("system", "tools") if k in body})
        head = self._heads.get(data)
        if head is None:
            head = (xxhash.xxh3_64_intdigest(data), self.count(data.decode()) if len(data) > 2 else 0)
            self._heads[data] = head
        return head

    def add(self, body: dict) -> Priced:
        infos = [self._info(m) for m in body["messages"]]
        last_person = last_person_index(infos)
        keys: list[int] = []
        tokens: list[int] = []
        for i, info in enumerate(infos):
            if any(info.thinking) and not (info.is_assistant and sends_thinking(i, last_person)):
                for key, n, thinking in zip(info.keys, info.tokens, info.thinking):
                    if not thinking:
                        keys.append(key)
                        tokens.append(n)
            else:
                keys.extend(info.keys)
                tokens.extend(info.tokens)
        head_key, head_tokens = self._head(body)
        cost = self.cache.add(keys, tokens, head_key, head_tokens)
        total = head_tokens + sum(tokens)
        self.sizes.append(total)
        return Priced(total, cost)


@dataclass
class SideStats:
    """Totals of one side of a replay."""

    tokens_sum: int = 0
    tokens_peak: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    compactions: int = 0

    def add(self, priced: Priced) -> None:
        self.tokens_sum += priced.tokens
        self.tokens_peak = max(self.tokens_peak, priced.tokens)
        self.cache_read += priced.cache.read
        self.cache_write += priced.cache.write
        self.cost += priced.cache.cost

    def finish(self, sizes: list[int]) -> "SideStats":
        """`sizes`: each request's tokens as the host sees them (plus any unseen head)."""
        self.compactions = compaction_events(sizes)
        self.cost = round(self.cost, 1)
        return self
