"""Absolute token-pressure tiers: always, medium (>= 50K tokens), high (>= 150K).

Each stage declares the lowest tier at which it runs. Thresholds are configurable, with
per-model overrides chosen by the longest matching model-name prefix. The two tiers mean
different things. Medium is "enough tokens that cost cuts pay": a count of tokens, the same in
any window (a 1M window does not make a token cheaper). High is "the host compacts soon": it
gates what may hide the agent's only copy, so it is set for a `REFERENCE_WINDOW` (200K-token)
context window and, when the caller knows the request's window (a 1M-token window: Anthropic's
`context-1m` beta, which Claude Code 2.1 sends), or the model's is known (`KNOWN_WINDOWS`),
scales with it (`for_window`); medium stays where it is, lowered only to stay at or below high in
a window smaller than 200K. Per-model overrides are absolute and never scaled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from compress.model_names import LONG_CONTEXT_SUFFIX, normalized

REFERENCE_WINDOW = 200_000
"""The context window the configured thresholds are meant for."""

NATIVE_1M = 1_000_000

KNOWN_WINDOWS: Mapping[str, int] = {
    "gpt-5": 272_000, "gpt-5.6": 372_000, "gpt-6": 272_000, "gpt-6.1-sol": 500_000, "gpt-6.1-terra": 500_000, "gpt-6.2-sol": 500_000,
    "claude-opus-4-7": NATIVE_1M, "claude-opus-4-8": NATIVE_1M, "claude-opus-5": NATIVE_1M,
    "claude-sonnet-5": NATIVE_1M, "claude-haiku-5": NATIVE_1M, "claude-fable-5": NATIVE_1M,
    "claude-mythos-5": NATIVE_1M,
}
"""Context windows by model-name prefix (`compress.model_names.normalized`), for requests that do
not say theirs. The GPT-5 family (Codex's models) reads 272K tokens: the corpus's Codex sessions
compacted at 230K-236K reported input tokens, beyond a 200K window, and their recordings report
the 258,400 tokens Codex uses of it (95%); a GPT-5.6 recording reports 353,400, 95% of 372K, which
the GPT-5.6 family gets (GPT-5.4 and 5.5 recordings report 258,400: 272K). Codex 0.171's model
catalogue gives the GPT-6 models 272K, but 500K for GPT-6.1 Sol and Terra and GPT-6.2 Sol. The
Claude models Claude Code 2.1.332's own model table marks `native_1m` read 1M tokens without the
`context-1m` beta (Opus 4.7 and later, Sonnet, Haiku, Fable and Mythos 5): Claude Code sizes its
auto-compaction to that window. Older Claude models keep the 200K reference unless a request asks for 1M
(the `context-1m` beta, or a `[1m]` suffix on the model id: `LONG_CONTEXT_SUFFIX`).

Sources (checked 2026-12): Anthropic's model pages (platform.claude.com/docs/en/models: Opus 4.7,
4.8, 5, 5.5, Sonnet 5 and 5.5, Haiku 5.5, Fable 5, 5.1 and 5.2, Mythos 5: 1M tokens) and Claude
Code's baked-in model catalogue (its `native 1M` column); for OpenAI, the window Codex uses, not
the API's (GPT-5.5's API reads 1M, GPT-5.6 Sol 1.05M, but Codex's catalogue caps GPT-5.4 and 5.5 at
272K, 95% of which it reports as `model_context_window`). The GPT-5.6 family has no one window
across clients: Codex 0.171's catalogue gives Sol, Terra and Luna 272K (configurable up to 872K),
OpenCode's bundled model list 1.05M on most providers and 372K for Sol and Terra on one, and a
GPT-5.6 recording reports 353,400 (95% of 372K). The table keeps 372K for a client that does not
say its window: a window too large only delays the high tier's cuts, where one too small would
settle bodies that are the agent's only copy long before the host compacts. A request from Codex
(its `originator` header) gets Codex's window (`CLIENT_WINDOWS`), an OpenCode one the window its
plugin reports; a user whose client runs another window sets its tiers
(`[compress.model_tiers."gpt-5.6"]`)."""


def _longest_prefix(model: str, prefixes: Iterable[str]) -> str | None:
    """The longest of `prefixes` that `model` starts with, or None."""
    return max((p for p in prefixes if model.startswith(p)), key=len, default=None)


CLIENT_WINDOWS: Mapping[str, Mapping[str, int]] = {
    "codex": {"gpt-5.6": 272_000},
}
"""Windows a client gives a model where they differ from `KNOWN_WINDOWS`, by client and
model-name prefix. Codex 0.171's bundled catalogue gives GPT-5.6 Sol, Terra and Luna 272K
(`context_window`; a user may raise it to their `max_context_window`, 872K, with
`model_context_window`, which Codex does not send); its other models' windows are the table's.
OpenCode sends its own window for the model (models.dev's `limit.context`) through its plugin."""


def known_window(model: str, client: str | None = None) -> int | None:
    """The context window of `model` as `client` runs it (`CLIENT_WINDOWS`), else as
    `KNOWN_WINDOWS` knows it (longest prefix of its normalized name; a dated or variant suffix
    such as `-20260416`, `-sol` or `-codex` keeps its family's), 1M for a model id that asks
    for it (`claude-opus-4-6[1m]`), else None."""
    name = normalized(model)
    if name.endswith(LONG_CONTEXT_SUFFIX):
        return NATIVE_1M
    for table in (CLIENT_WINDOWS.get(client or "", {}), KNOWN_WINDOWS):
        if (best := _longest_prefix(name, table)) is not None:
            return table[best]
    return None


class Tier(IntEnum):
    ALWAYS = 0
    MEDIUM = 1
    HIGH = 2

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: str) -> Tier:
        try:
            return cls[value.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown tier {value!r} (always, medium, high)") from None


@dataclass(frozen=True, slots=True)
class TierThresholds:
    medium: int = 50_000
    high: int = 150_000

    def __post_init__(self) -> None:
        if not 0 < self.medium <= self.high:
            raise ValueError(f"tier thresholds must satisfy 0 < medium <= high, got {self}")

    def for_window(self, window: int | None) -> TierThresholds:
        """The thresholds for a context window of `window` tokens (None: unknown, as is): high
        scaled by `window / REFERENCE_WINDOW`, medium as is but never above that high."""
        if not window or window <= 0 or window == REFERENCE_WINDOW:
            return self
        high = max(1, round(self.high * window / REFERENCE_WINDOW))
        return TierThresholds(min(self.medium, high), high)

    def tier_for(self, tokens: int) -> Tier:
        if tokens >= self.high:
            return Tier.HIGH
        if tokens >= self.medium:
            return Tier.MEDIUM
        return Tier.ALWAYS


def thresholds_for(model: str, default: TierThresholds,
                   overrides: Mapping[str, TierThresholds], window: int | None = None) -> TierThresholds:
    """The override whose key is the longest prefix of `model`, else `default` scaled to the
    context `window` (None: the model's `known_window`, if any)."""
    best = _longest_prefix(model, overrides)
    return overrides[best] if best is not None else default.for_window(window or known_window(model))
