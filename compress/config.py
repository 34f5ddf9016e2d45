"""The one typed configuration object of the transform. Faces build it; engines only read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from compress.provider_cache import LOOKBACK_BLOCKS
from compress.tiers import TierThresholds
from compress.vocab.tools import PROTECTED_TOOLS


@dataclass(frozen=True)
class CompressConfig:
    tiers: TierThresholds = TierThresholds()
    model_tiers: Mapping[str, TierThresholds] = field(default_factory=dict)
    epoch_savings_threshold: int = 20_000
    """A new epoch starts when re-deciding the messages that left the protected tail since the
    last epoch would save at least this many tokens."""
    cache_window_blocks: int = LOOKBACK_BLOCKS
    """Providers look for a cached prefix only this many content blocks back from the end of a
    request (Anthropic: 20); a change further back makes the whole request a cache write."""
    window_epoch_savings: int = 1_000
    """A cheaper epoch: when the first message to re-decide is still within the cache window,
    saving this many tokens is enough, since only the few blocks after it are written again;
    so is it when the provider must write the whole request anyway (a re-run from the start)."""
    window_start_min_tokens: int = 200
    """A window epoch starts at the first unsettled message in the cache window that holds at
    least this many compressible tokens: a smaller one can save next to nothing, and starting
    the re-decision there would make the provider write every message after it again (corpus
    replay: 50 → effective 0.664, 200 → 0.659, 500 → 0.666, 1,000 → 0.672; needed lines equal)."""
    epoch_horizon: float = 0.25
    """Cost-aware epochs: a savings epoch must also pay back the cache writes it causes within
    the requests still expected, taken as this many times the assistant turns so far; 0 turns
    the check off. A quarter, not as long again: a rewrite priced on a future the session does
    not have makes it cost more than sending everything (corpus replay, 1.0: two sessions above
    raw, 1.006 and 1.030). Judged leave-one-project-out with `bench/loo_horizon.py` (1.0 / 0.5 /
    0.25: every held-out project chooses 0.25)."""
    trials_after_answer_from: int = 50_000
    """An epoch trial of a request this large (the pipeline's token estimate) that would rewrite
    what the provider reads is judged after the request's answer, the epoch it finds worth
    taking first sent with the next request (`compress.runner.trial`); 0 judges every trial during the
    run. Off the request path a 300K-token session's p99 falls from ~100 ms to under 10; the
    one-request wait costs the corpus replay 0.622 -> 0.624 effective (Claude Code sessions
    0.609 -> 0.611), the needed lines the same. Below ~50K tokens a second plan costs under
    ~10 ms, less than waiting (every size deferred: the short SWE-agent sessions 0.867 -> 0.917)."""
    cache_ttl: str = "auto"
    """How long the provider keeps this session's cached prefix (`compress.provider_cache.LIVES`):
    "auto" takes what the request's cache breakpoints ask for (Anthropic: an hour when a
    `cache_control` says `"ttl": "1h"`, else 5 minutes), "5m" or "1h" says it. It prices an
    epoch's cache writes (`pays_off`), and a request that comes after the cache expired (the
    caller gives the time) re-decides every message for free: the provider writes it all anyway."""
    protect_tail_tokens: int = 4_000
    protect_tail_turns: int = 2
    protect_tail_blocks: int = 10
    """The protected tail: the newest messages, never compressed. It holds at least
    `protect_tail_turns` assistant turns and grows until it holds `protect_tail_tokens` tokens or
    `protect_tail_blocks` content blocks (0: no block limit), whichever comes first. The block
    limit keeps a message that leaves the tail inside the provider's cache lookback
    (`cache_window_blocks`), where re-deciding it rewrites only the few blocks after it."""
    min_saving_fraction: float = 0.15
    min_saving_chars: int = 200
    """A lossy result is kept only if it saves both this fraction and this many characters."""
    protected_tools: frozenset[str] = PROTECTED_TOOLS
    """Tools whose results are never compressed (`compress.vocab.tools.is_protected_tool`)."""
    disabled_stages: frozenset[str] = frozenset()
    stage_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per-stage knobs by stage name; each stage documents its own keys and defaults."""
    redact_extra: tuple[str | tuple[str, str], ...] = ()
    """More secret patterns (regex, or (kind, regex)) redacted from originals before CCR stores them."""
    redact_allow: tuple[str, ...] = ()
    """Regexes for values the redaction must keep (see ground.redact)."""

    def options(self, stage: str) -> Mapping[str, Any]:
        return self.stage_options.get(stage, {})


T = TypeVar("T")


def options_as(cls: type[T], options: Mapping[str, Any]) -> T:
    """A stage's options dataclass `cls` from its `config.options(...)` mapping; keys that are
    not fields of `cls` are ignored, missing ones keep their defaults."""
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in options.items() if k in known})
