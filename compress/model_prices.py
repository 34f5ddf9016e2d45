"""List prices per model, in US dollars per million tokens: the one table of model prices.

The ledger prices requests with it (`ctxmill.ledger`), and the engine reads its cache prices
from it (`compress.provider_cache.cache_life`: what a cut saves per request against what its
cache rewrite costs). Each row: input (uncached), cache read, cache write (Anthropic's 5-minute
write; OpenAI's 30-minute write from the GPT-5.6 family on, 1.25x input; before it OpenAI had
no write premium, so the write price is the input price), output. A model name is matched by
the longest row name it starts with (followed by the end, `-`, `[`, `@` or `:`), as
`compress.model_names.normalized` spells it (`claude-sonnet-4-5-20250929` is `claude-sonnet-4-5`,
`us.anthropic.claude-opus-5-5` is `claude-opus-5-5`). Unknown models (fallback, documented in
docs/dashboard.md): an Anthropic-shaped request is priced as Claude Sonnet, any other as GPT-5;
`Price.name` then says `"<row> (fallback)"`, and the ledger keeps that name.
"""

from __future__ import annotations

from dataclasses import dataclass

from compress.model_names import normalized


@dataclass(frozen=True)
class Price:
    name: str
    input: float
    cache_read: float
    cache_write: float
    output: float
    long_context_above: int | None = None
    """Input tokens above which a request's input and cache prices double, for the whole request
    (OpenAI's GPT-6 models: 272K; their output then costs 1.5x, not modelled)."""
    any_prefix: bool = False
    """The provider serves a cache hit on any prefix of a prompt it recently processed, not only
    where a request ended (OpenAI before the GPT-5.6 family, in 128-token increments; from it
    on, implicit caching keeps the prefix at a breakpoint near the latest message)."""

    @property
    def read_ratio(self) -> float:
        """A cache read's price in units of the input price."""
        return round(self.cache_read / self.input, 6)

    @property
    def write_ratio(self) -> float:
        """A cache write's price in units of the input price."""
        return round(self.cache_write / self.input, 6)

    def cost(self, input: int = 0, cache_read: int = 0, cache_write: int = 0, output: int = 0) -> float:
        """Dollars for these token counts."""
        return (input * self.input + cache_read * self.cache_read + cache_write * self.cache_write
                + output * self.output) / 1e6


def _anthropic(name: str, input: float, output: float, read: float | None = None) -> Price:
    """Anthropic: 5-minute cache writes at 1.25x input; cache reads at 0.1x unless listed otherwise."""
    return Price(name, input, input * 0.1 if read is None else read, input * 1.25, output)


def _openai(name: str, input: float, cached: float, output: float) -> Price:
    """OpenAI before the GPT-5.6 family: cached input as listed, no cache-write premium, a hit on
    any prefix of a recently processed prompt (developers.openai.com, prompt caching)."""
    return Price(name, input, cached, input, output, any_prefix=True)


def _openai_written(name: str, input: float, cached: float, output: float, long_context_above: int | None = None) -> Price:
    """OpenAI from the GPT-5.6 family on: cached input as listed, 30-minute cache writes at
    1.25x input (developers.openai.com, prompt caching)."""
    return Price(name, input, cached, input * 1.25, output, long_context_above)


GPT_6_LONG_CONTEXT = 272_000
"""Above this many input tokens a GPT-6 request's input and cache rates double (model pages)."""


PRICES: tuple[Price, ...] = (  # list prices as published in November 2026, standard (short-context) tier
    _anthropic("claude-fable-5-1", 10.0, 50.0, read=0.25),
    _anthropic("claude-mythos-5-1", 10.0, 50.0, read=0.25),
    _anthropic("claude-fable-5", 10.0, 50.0, read=1.0),
    _anthropic("claude-mythos-5", 10.0, 50.0, read=1.0),
    _anthropic("claude-opus-5-5", 4.0, 20.0, read=0.2),
    _anthropic("claude-opus-5", 5.0, 25.0),
    _anthropic("claude-opus-4-8", 5.0, 25.0),
    _anthropic("claude-opus-4-7", 5.0, 25.0),
    _anthropic("claude-opus-4-6", 5.0, 25.0),
    _anthropic("claude-opus-4-5", 5.0, 25.0),
    _anthropic("claude-opus-4-1", 15.0, 75.0),
    _anthropic("claude-opus-4", 15.0, 75.0),
    _anthropic("claude-3-opus", 15.0, 75.0),
    _anthropic("claude-sonnet-5-5", 2.0, 10.0, read=0.1),
    _anthropic("claude-sonnet-5", 2.0, 10.0),
    _anthropic("claude-sonnet-4-6", 3.0, 15.0),
    _anthropic("claude-sonnet-4-5", 3.0, 15.0),
    _anthropic("claude-sonnet-4", 3.0, 15.0),
    _anthropic("claude-3-7-sonnet", 3.0, 15.0),
    _anthropic("claude-3-5-sonnet", 3.0, 15.0),
    _anthropic("claude-haiku-5-5", 0.1, 0.5),  # prompts up to 100K tokens; longer ones cost 5x
    _anthropic("claude-haiku-4-5", 1.0, 5.0),
    _anthropic("claude-3-5-haiku", 0.8, 4.0),
    _anthropic("claude-3-haiku", 0.25, 1.25, read=0.03),
    _openai_written("gpt-6.2-sol", 2.0, 0.1, 10.0, GPT_6_LONG_CONTEXT),
    _openai_written("gpt-6.1-sol", 2.0, 0.1, 10.0, GPT_6_LONG_CONTEXT),
    _openai_written("gpt-6.1-terra", 1.0, 0.05, 5.0, GPT_6_LONG_CONTEXT),
    _openai_written("gpt-6-astra", 10.0, 1.0, 50.0, GPT_6_LONG_CONTEXT),
    _openai_written("gpt-6-sol", 2.0, 0.2, 10.0, GPT_6_LONG_CONTEXT),
    _openai_written("gpt-6-luna", 0.1, 0.01, 0.5, GPT_6_LONG_CONTEXT),
    _openai_written("gpt-5.6-sol", 5.0, 0.5, 30.0),
    _openai_written("gpt-5.6-terra", 2.0, 0.2, 12.0),
    _openai_written("gpt-5.6-luna", 0.2, 0.02, 1.2),
    _openai("gpt-5.5", 5.0, 0.5, 30.0),
    _openai("gpt-5.4-mini", 0.75, 0.075, 4.5),
    _openai("gpt-5.4", 2.5, 0.25, 15.0),
    _openai("gpt-5.3", 1.75, 0.175, 14.0),
    _openai("gpt-5.2", 1.75, 0.175, 14.0),
    _openai("gpt-5.1", 1.25, 0.125, 10.0),
    _openai("gpt-5-mini", 0.25, 0.025, 2.0),
    _openai("gpt-5-nano", 0.05, 0.005, 0.4),
    _openai("gpt-5", 1.25, 0.125, 10.0),
    _openai("gpt-4.1-mini", 0.4, 0.1, 1.6),
    _openai("gpt-4.1-nano", 0.1, 0.025, 0.4),
    _openai("gpt-4.1", 2.0, 0.5, 8.0),
    _openai("gpt-4o-mini", 0.15, 0.075, 0.6),
    _openai("gpt-4o", 2.5, 1.25, 10.0),
    _openai("o4-mini", 1.1, 0.275, 4.4),
    _openai("codex-mini", 1.5, 0.375, 6.0),
    _openai("o3", 2.0, 0.5, 8.0),
)
_BY_LENGTH = sorted(PRICES, key=lambda p: len(p.name), reverse=True)
_SUFFIX_START = "-[@:"
"""What may follow a row's name in a model name of that row (`-20250929`, `-codex`, `[1m]`):
`gpt-5.6-sol` is not a `gpt-5`, `claude-sonnet-4-5-20250929` is a `claude-sonnet-4-5`."""
_FALLBACK = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5"}


def listed_price(model: str) -> Price | None:
    """The row for `model` (longest matching prefix), or None when the table has none."""
    name = normalized(model)
    return next((price for price in _BY_LENGTH if name == price.name or (
        name.startswith(price.name) and name[len(price.name)] in _SUFFIX_START)), None)


def price_for(model: str, vendor: str = "") -> Price:
    """The row for `model` (`listed_price`), else the fallback of `vendor` ("anthropic": Claude
    Sonnet; anything else: GPT-5), named `"<row> (fallback)"`."""
    listed = listed_price(model)
    if listed is not None:
        return listed
    name = normalized(model)
    base = _FALLBACK.get(vendor) or ("claude-sonnet-4-5" if name.startswith("claude") else "gpt-5")
    row = next(p for p in PRICES if p.name == base)
    return Price(f"{row.name} (fallback)", row.input, row.cache_read, row.cache_write, row.output)
