"""When a run starts a new epoch, and from which message.

Between epochs a known prefix renders as before and only new messages are processed. An
epoch re-decides messages, and it is priced the way the provider caches
(`compress.provider_cache`). It must start on a new session, a changed provider or history,
or when what the provider is sent moves into the tier that forces one (`FORCING_TIER`, high:
the host compacts on what the provider counts, soon after; `forced_reason`). A move into a lower
tier, or a request whose raw size is in the high tier while earlier epochs keep what is sent
below it, waits for the next epoch, which re-decides the old
messages at that tier's budgets: re-deciding all of them at once saves little (their budgets
shrink by a third) and makes the provider write the whole request again. A request that finds
the provider's cache expired (`CacheLife`) tries a re-run from the start, which writes nothing
the provider would not write anyway. Otherwise an epoch is tried when the messages a
re-decision may cut more of (`open_to_cuts`: those that left the protected tail since they were
decided, and old ones kept whole) could pay for it (`epoch_trial`), and taken when the trial
saves enough tokens and pays back the cache writes it causes (`pays_off`), from the cached
request where it gains most (`best_start`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

from compress.config import CompressConfig
from compress.model import Message
from compress.provider_cache import LIVES, CacheLife, first_dropped_thinking
from compress.state.session import Record, Session
from compress.tiers import Tier


@dataclass(frozen=True, slots=True)
class EpochChoice:
    start: int
    """First message to re-decide."""
    needed: int
    """Tokens the epoch must save at least."""
    cached_end: int
    """End of the cached request the provider reads after the epoch (0: none, all is written)."""
    read_end: int
    """... and without it (0: none; the provider writes the whole request anyway)."""
    potential: int
    """Compressible tokens at stake (of the messages open to cuts)."""

    def retry_at(self) -> int:
        """After this trial did not pay off: the compressible tokens the next trial waits for,
        when it was a re-run from the start while the provider could read a cached request
        (else 0: no wait)."""
        return self.potential + self.needed // 2 if self.read_end and not self.cached_end else 0


FORCING_TIER = Tier.HIGH
"""When what the provider is sent moves into this tier (or above), an epoch starts at once; a
move into a lower one waits."""


def forced_reason(session: Session, provider: str, tier: Tier, frozen: int, sent_tier: Tier) -> tuple[str, bool]:
    """Why this run must start an epoch whatever it saves ('' if it need not), and whether token
    pressure forces it; `frozen`: the messages the session already knows; `tier`: the request's,
    `sent_tier`: that of the request as the session would render it without an epoch. The host
    compacts on what the provider is sent, so only a rendering in the forcing tier forces one: a
    forced epoch when earlier ones keep the rendering far below it would make the provider write
    the whole request again for little (corpus replay: effective 0.637 -> 0.630, the same
    compactions). The session's `Header.tier` is the pressure the last epoch left
    (`left_pressure`), so a rendering that stays in the forcing tier forces one epoch, not one
    per request."""
    header = session.header
    if not session.records or header.provider != provider:
        return "new session", False
    if header.tier < FORCING_TIER <= min(tier, sent_tier):
        return f"tier {Tier(header.tier).label if header.tier >= 0 else '?'} → {tier.label}", True
    if frozen == 0:
        return "history changed", False
    return "", False


def left_pressure(tier: Tier, rendered_tier: Tier, pressed: bool) -> int:
    """The pressure an epoch leaves (`Header.tier`): the request's tier after an epoch token
    pressure forced (it cut what it could: no other is forced until an epoch leaves the rendering
    below the forcing tier), else the lower of the request's and its rendering's."""
    return int(tier if pressed else min(tier, rendered_tier))


def lookback_for(provider: str, config: CompressConfig) -> int | None:
    """How many content blocks back from a request's end the provider looks for a cached prefix:
    Anthropic's cache checks `cache_window_blocks` blocks before its breakpoint; OpenAI-style
    providers reuse any earlier prefix (None), so re-deciding messages far back rewrites only
    what follows them."""
    return config.cache_window_blocks if provider == "anthropic" else None


KEPT_WHOLE = 0.9
"""A message rendered with at least this share of its tokens was kept (nearly) whole."""


def open_to_cuts(record: Record) -> bool:
    """Whether a re-decision may cut more of a message than its rendering does: it was decided
    in the protected tail ("unsettled"), or it was decided outside it yet kept (nearly) whole
    (`KEPT_WHOLE`; a read's thinned line numbers are all it lost) though it holds compressible
    content. Such a message ripens as it ages: a read goes cold, a write's body settles, a
    subagent's report ages out. Corpus replay: 0.626 / 0.634 -> 0.622 / 0.630 (1.0 and 0.5
    instead of 0.9: 0.623 / 0.631), needed lines the same; addis-ale task-54, whose old reads
    were kept whole for 150 requests, 0.937 -> 0.880."""
    return not record.settled or (record.compressible > 0 and record.out_tokens >= KEPT_WHOLE * record.raw_tokens)


def first_resent(messages: list[Message], frozen: int, thinking_kept: bool) -> int:
    """How many leading messages the provider gets exactly as in the last request: those before
    the first one the client changed (`frozen`) or whose thinking it now drops
    (`first_dropped_thinking`). Only requests that ended there or earlier are cached prefixes."""
    return min(frozen, first_dropped_thinking(messages, frozen, thinking_kept))


def cached_prefixes(session: Session, changed: int, any_prefix: bool) -> list[int]:
    """The message counts at which the provider holds a cached prefix of this request, given that
    its first `changed` messages are sent as in the last request (`first_resent`): where earlier
    requests ended, or, when the provider caches any prefix of a prompt it processed
    (`CacheLife.any_prefix`: OpenAI before GPT-5.6), every message boundary up to `changed`
    once a request was sent."""
    if any_prefix and session.request_ends:
        return list(range(1, changed + 1))
    return [e for e in session.request_ends if e <= changed]


def epoch_trial(messages: list[Message], blocks: list[int], frozen: int, tail: int, session: Session,
                hashes: list[str], config: CompressConfig, thinking_kept: bool = False,
                provider: str = "anthropic", cache_expired: bool = False, any_prefix: bool = False) -> EpochChoice | None:
    """Whether to try an epoch now, and from which message, or None.

    When the provider's cache has expired since the last request (`cache_expired`), it writes
    the whole request whatever changed: a re-run from the start costs nothing extra. Otherwise
    the provider reads the longest cached request that is still a prefix and ends within
    its last blocks (`lookback_for` the `provider`: Anthropic's 20, anywhere for OpenAI; with
    `any_prefix`, any prefix of the last request: `cached_prefixes`) ("read end"). When none is, it writes the whole
    request anyway (a person wrote, so it dropped the last turn's thinking; never when the
    request keeps all thinking): a re-run from the start costs nothing extra and must only save
    `window_epoch_savings`. Otherwise, when messages open to cuts (`open_to_cuts`) worth re-deciding
    (`window_start_min_tokens`) lie after a cached request within the window, they are
    re-decided from the first of them (only the blocks after the last cached request before it
    are written again; `window_epoch_savings`); else a re-run from the start makes the provider
    write everything and must save `epoch_savings_threshold`. `blocks`: each message's blocks
    as the provider counts them.
    """
    if cache_expired:
        return EpochChoice(0, config.window_epoch_savings, 0, 0, 0)
    lookback = lookback_for(provider, config)
    suffix = list(itertools.accumulate(reversed(blocks), initial=0))[::-1]
    changed = first_resent(messages, frozen, thinking_kept)
    in_window = [e for e in cached_prefixes(session, changed, any_prefix) if lookback is None or suffix[e] < lookback]
    if not in_window:
        return EpochChoice(0, config.window_epoch_savings, 0, 0, 0)
    read_end = max(in_window)
    records = session.records
    candidates = [i for i in range(min(frozen, tail)) if open_to_cuts(records[hashes[i]])]
    if not candidates:
        return None
    window = [i for i in candidates
              if i >= min(in_window) and records[hashes[i]].compressible >= config.window_start_min_tokens]
    at_stake = sum(records[hashes[i]].compressible for i in window)
    if window and at_stake >= config.window_epoch_savings:
        cached_end = max(e for e in in_window if e <= window[0])
        return EpochChoice(window[0], config.window_epoch_savings, cached_end, read_end, at_stake)
    potential = sum(records[hashes[i]].compressible for i in candidates)
    big = config.epoch_savings_threshold
    if potential >= max(big, session.header.next_trial_at):
        return EpochChoice(0, big, 0, read_end, potential)
    return None


def in_reach_next_time(choice: EpochChoice, blocks: Sequence[int], last_end: int, provider: str,
                       config: CompressConfig) -> bool:
    """Whether an epoch chosen for this request could start with the next one for about the same
    price: the cached request it starts after (`choice.cached_end`) stays within the provider's
    lookback (`lookback_for`) once the next request adds as many blocks as this one added after
    the last (`last_end`), twice over. A re-run from the start, or a provider that reuses any
    earlier prefix, has no such limit."""
    lookback = lookback_for(provider, config)
    if not choice.cached_end or lookback is None:
        return True
    added = sum(blocks[last_end:])
    return sum(blocks[choice.cached_end:]) + 2 * added < lookback


def pays_off(choice: EpochChoice, current: Sequence[int], trial: Sequence[int], turn: int,
             config: CompressConfig, life: CacheLife = LIVES["5m"]) -> bool:
    """Whether the trial (its messages' output tokens, against the current rendering's) saves
    `choice.needed` tokens and pays back its cache writes: the saving, read at the cache's read
    price (`life`) in each of the requests still expected (`epoch_horizon` × the assistant turns
    so far), outweighs writing the trial from `choice.cached_end` on at its write price instead
    of reading the current rendering up to `choice.read_end`."""
    saved = sum(current) - sum(trial)
    if saved < choice.needed:
        return False
    if config.epoch_horizon <= 0:
        return True
    span = slice(choice.cached_end, choice.read_end)
    return _gain(saved, sum(trial[span]), sum(current[span]), turn, config, life) >= 0


def rewrite_could_pay(choice: EpochChoice, current: Sequence[int], turn: int, config: CompressConfig,
                      life: CacheLife = LIVES["5m"]) -> bool:
    """Whether an epoch from `choice.start` or later, priced as a rewrite of everything up to
    `choice.read_end` (`pays_off` with no cached request read), could pay off at all, from the
    current rendering's tokens alone (`current`): it saves at most every token from its start on,
    and writes at least the messages before its start, which it renders as they are. False means
    no plan of it pays off, so none need be built."""
    most = sum(current[choice.start:])
    if most < choice.needed:
        return False
    if config.epoch_horizon <= 0:
        return True
    return _gain(most, sum(current[:choice.start]), sum(current[:choice.read_end]), turn, config, life) >= 0


def _gain(saved: int, written: int, not_read: int, turn: int, config: CompressConfig, life: CacheLife) -> float:
    """What an epoch that saves `saved` tokens per request gains over the expected requests
    (`epoch_horizon` × `turn`, at least one): the saving read at the read price in each, less
    writing `written` tokens (the trial's, from the cached request it starts after) instead of
    reading `not_read` (the current rendering's, up to the request the provider would have read)."""
    expected = max(1.0, config.epoch_horizon * turn)
    return life.read_price * saved * expected - (life.write_price * written - life.read_price * not_read)


def best_start(choice: EpochChoice, request_ends: Sequence[int], current: Sequence[int], trial: Sequence[int],
               turn: int, config: CompressConfig, life: CacheLife) -> EpochChoice:
    """Where an epoch that re-decides from a cached request (`choice.cached_end`) gains most: at
    `choice.start`, or at a later cached prefix end (`request_ends`: `cached_prefixes`) up to `choice.read_end` (each lies within
    the provider's lookback, as `choice.cached_end` does), judged on the trial's renderings
    (`_gain`; it must still save `choice.needed` and pay off, or no later start is worth
    planning again). The messages before the start keep their rendering, so the provider reads
    them from its cache and writes only what follows: when what the older messages would save
    does not pay for writing everything after them again, a later start leaves them to a later
    epoch (or an expired cache).

    Measured on the corpus (one run, each side priced alike): Codex sessions 0.746 -> 0.742
    effective at their recorded models' prices and 0.751 -> 0.705 as on GPT-6.2 Sol (reads at
    0.05, writes at 1.25), needed lines the same; Claude Code's window epochs start near the end
    already (docs/replay-results.md)."""
    now = list(itertools.accumulate(current, initial=0))
    new = list(itertools.accumulate(trial, initial=0))

    def gain(start: int, cached_end: int) -> tuple[int, float]:
        saved = (now[-1] - now[start]) - (new[-1] - new[start])
        end = choice.read_end
        return saved, _gain(saved, new[end] - new[cached_end], now[end] - now[cached_end], turn, config, life)

    best, best_gain = choice, max(0.0, gain(choice.start, choice.cached_end)[1])
    for start in (e for e in request_ends if choice.start < e <= choice.read_end):
        saved, later = gain(start, start)
        if saved >= choice.needed and later > best_gain:
            best, best_gain = replace(choice, start=start, cached_end=start), later
    return best
