"""The provider's prompt cache as the engine prices it (Anthropic-style, on content blocks).

A request reads from cache the longest earlier request that is still an exact block prefix of
it and ends within its last `LOOKBACK_BLOCKS` content blocks, and writes the rest. Thinking
blocks count only in the assistant messages after the last message a person wrote: once a
person writes, the provider drops the thinking of the turns before. A request that keeps all
thinking (`thinking_kept`: Anthropic's `clear_thinking_20251015` edit with `keep: "all"`, sent
by Claude Code 2.1) has every thinking block read and cached like any other block, and nothing
is dropped when a person writes. Prices are in units of the base input price.

How long a cached prefix lives unused, and what writing it costs, is its `CacheLife`
(`cache_life`): Anthropic keeps it 5 minutes (writes at 1.25) or, when the request's breakpoints
ask, an hour (writes at 2.0); every read renews it. Once it has expired the provider writes the
whole request again, whatever changed. OpenAI promises only a least lifetime (30 minutes from the
GPT-5.6 family on, longer when it has room), never an end, so its cache is never taken to have
expired. Before that family it serves any prefix of a prompt it processed, not only where a
request ended (`CacheLife.any_prefix`), so an epoch there rewrites only what follows its start
(`compress.runner.epochs.cached_prefixes`). What reads and writes cost, against the input price, is the model's row in the one price
table (`compress.model_prices`): reads at 0.1 for most models, 0.05 for Claude Opus 5.5 and
GPT-6.1 and 6.2, 0.025 for Claude Fable 5.1; OpenAI's writes at 1.25 from GPT-5.6 on, free
before. A model the table does not list is priced as Claude Sonnet in Anthropic's shape, and in
any other as a provider that discounts cached input by half and charges no write premium
(`UNLISTED`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from compress.model import Message, last_person_index
from compress.model_prices import listed_price, price_for

READ_PRICE = 0.1
WRITE_PRICE = 1.25
LOOKBACK_BLOCKS = 20


@dataclass(frozen=True, slots=True)
class CacheLife:
    """How long the provider keeps a cached prefix unused, and what writing one costs."""

    name: str
    write_price: float
    """In units of the base input price."""
    seconds: float | None
    """Unused this long, the prefix is gone (None: the provider promises no lifetime)."""
    read_price: float = READ_PRICE
    """Of cached input, in units of the base input price."""
    any_prefix: bool = False
    """A hit on any prefix of an earlier request, not only where one ended
    (`compress.model_prices.Price.any_prefix`)."""

    def expired(self, last_request_at: float, now: float | None) -> bool:
        """Whether a request at `now` (None: unknown) finds nothing the request at
        `last_request_at` (0: none) cached."""
        return bool(self.seconds and last_request_at and now is not None and now - last_request_at > self.seconds)


LIVES = {"5m": CacheLife("5m", WRITE_PRICE, 300.0), "1h": CacheLife("1h", 2.0, 3600.0)}
"""Anthropic's cache lifetimes, by the name a `cache_control` `ttl` gives them (reads at 0.1,
unless the model's price row says otherwise)."""
UNLISTED = CacheLife("unpromised", 1.0, None, 0.5)
"""A model outside the price table in a shape other than Anthropic's: no promised lifetime, no
write premium, cached input at half the input price."""


def cache_life(provider: str, asked: str | None, configured: str = "auto", model: str = "") -> CacheLife:
    """The lifetime and prices of the cache a request for `model` writes. Anthropic:
    `configured` ("5m", "1h") when it names one, else what the request's breakpoints ask for
    (`asked`, `compress.formats.requests.cache_ttl`) or its default, 5 minutes; reads at the
    model's price. Every other provider is priced as OpenAI: no promised lifetime, reads and
    writes at the model's prices (`UNLISTED` when the table has no row for it)."""
    if provider != "anthropic":
        listed = listed_price(model)
        if listed is None:
            return UNLISTED
        return CacheLife("unpromised", listed.write_ratio, None, listed.read_ratio, listed.any_prefix)
    life = LIVES.get(configured) or LIVES.get(asked or "") or LIVES["5m"]
    return replace(life, read_price=price_for(model, "anthropic").read_ratio)


def sends_thinking(index: int, last_person: int, thinking_kept: bool = False) -> bool:
    """Whether the provider still sends the thinking blocks of message `index`, given the index
    of the last person-written message."""
    return thinking_kept or index > last_person


def provider_blocks(messages: list[Message], thinking_kept: bool = False) -> list[int]:
    """Content blocks of each message as the provider counts them for its cache lookback (at
    least one per message)."""
    last_person = last_person_index(messages)
    return [(len(m.blocks) if sends_thinking(i, last_person, thinking_kept) else len(m.blocks) - m.thinking_blocks)
            or 1 for i, m in enumerate(messages)]


def first_dropped_thinking(messages: list[Message], sent: int, thinking_kept: bool = False) -> int:
    """First of the `sent` already-sent messages the provider now renders differently: when a
    new person-written message arrived, it drops the thinking of the assistant messages since
    the previous one (len(messages) if none, and always when the request keeps all thinking)."""
    if thinking_kept or last_person_index(messages) < sent:
        return len(messages)
    previous = last_person_index(messages[:sent])
    return next((i for i in range(previous + 1, sent) if messages[i].has_thinking), len(messages))
