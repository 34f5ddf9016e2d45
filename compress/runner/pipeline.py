"""The per-turn transform: the ordered chain of stages and the runner.

`run(body, session=..., store=...)` reads a request in any provider shape
(`compress.formats.requests.SHAPES`), compresses it with the stages active at its tier, and
returns the new body and a report. It holds:

- Deterministic: same body and session state -> identical output bytes.
- Cache-stable: between epochs a message prefix the session has seen renders exactly as
  before; only new messages are processed, and ages count from the epoch's anchor turn.
  When a new epoch starts and from where: `compress.runner.epochs`.
- Protocol-safe: the stages change no message of the protected tail (`compress.runner.protected_tail`),
  and every stage's output is checked (`compress.runner.protocol_guard`); a stage that breaks a rule
  is dropped for that run and logged.
- Lossless: originals go to CCR and are committed before the body is returned.
- Fail open: nothing raises out of `run`; on any failure the original body comes back.
- Spends nothing on what the provider drops: messages before the last compaction, and tool
  results a context-editing clear will replace, are left as they are
  (`compress.formats.requests.managed`).
- Blind to nothing: a body that continues a conversation the provider stores
  (`compress.formats.requests.shape.stored_history`) comes back unchanged and leaves the session alone; the transform never
  decides about messages it cannot see.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Protocol

from compress.config import CompressConfig
from compress.formats.requests import (
    SHAPES,
    cache_ttl,
    detect,
    from_provider,
    keeps_all_thinking,
    remarked_messages,
    unmarked_messages,
)
from compress.formats.requests.managed import managed_floor
from compress.formats.requests.shape import stored_history
from compress.model import Message
from compress.prefix_scans import PrefixScans
from compress.provider_cache import cache_life, provider_blocks
from compress.runner.epochs import (
    cached_prefixes,
    epoch_trial,
    first_resent,
    forced_reason,
    in_reach_next_time,
    left_pressure,
    lookback_for,
)
from compress.runner.message_tokens import MessageTokens
from compress.runner.plan import Plan, Planner
from compress.runner.protected_tail import tail_start
from compress.runner.run_report import RunReport, RunResult
from compress.runner.trial import Trial, worth_deferring
from compress.stagekit.stage import Stage
from compress.stages import (
    compress_prose,
    crush_json,
    decide_on_arrival,
    dedup_tool_calls,
    nudges,
    purge_errors,
    reread_pointers,
    strip_injections,
    strip_reasoning,
    supersede_inputs,
    trim_outputs,
)
from compress.state.session import Session, known_prefix
from compress.tiers import Tier, thresholds_for
from compress.token_counters import estimate_tokens

log = logging.getLogger("ctxmill.compress")

DEFAULT_STAGES: tuple[Stage, ...] = (
    reread_pointers.STAGE,
    decide_on_arrival.STAGE,
    strip_reasoning.STAGE,
    strip_injections.STAGE,
    dedup_tool_calls.STAGE,
    purge_errors.STAGE,
    supersede_inputs.STAGE,
    crush_json.STAGE,
    trim_outputs.STAGE,
    compress_prose.STAGE,
    nudges.STAGE,
)
"""The one ordered list of stages. Later stages see the output of earlier ones."""


class Chain:
    """An ordered, editable list of named stages (like markdown-it-py's Ruler)."""

    def __init__(self, stages: Iterable[Stage] = DEFAULT_STAGES) -> None:
        self._stages: list[Stage] = list(stages)
        self._disabled: set[str] = set()

    def names(self) -> list[str]:
        return [s.name for s in self._stages]

    def _index(self, name: str) -> int:
        for i, stage in enumerate(self._stages):
            if stage.name == name:
                return i
        raise KeyError(f"no stage named {name!r} (have: {', '.join(self.names())})")

    def disable(self, *names: str) -> Chain:
        for name in names:
            self._index(name)
            self._disabled.add(name)
        return self

    def enable(self, *names: str) -> Chain:
        for name in names:
            self._index(name)
            self._disabled.discard(name)
        return self

    def before(self, name: str, stage: Stage) -> Chain:
        self._stages.insert(self._index(name), stage)
        return self

    def after(self, name: str, stage: Stage) -> Chain:
        self._stages.insert(self._index(name) + 1, stage)
        return self

    def replace(self, name: str, stage: Stage) -> Chain:
        self._stages[self._index(name)] = stage
        return self

    def push(self, stage: Stage) -> Chain:
        self._stages.append(stage)
        return self

    def active(self, tier: Tier, config: CompressConfig) -> list[Stage]:
        off = self._disabled | set(config.disabled_stages)
        return [s for s in self._stages if s.name not in off and s.min_tier <= tier]


class CCRWriter(Protocol):
    """What the runner needs of a CCR store: a batch of puts committed as one transaction.
    A store that expires entries also has `refresh_due(since) -> bool` and `refresh(keys) -> float`
    (`ccr.store.CCRStore`): the runner keeps the entries its requests still name alive."""

    def batch(self) -> Any: ...  # pragma: no cover - protocol
    def put(self, text: str, hint: str | None = None) -> str: ...  # pragma: no cover


def run(body: Any, *, session: Session, store: CCRWriter | None, config: CompressConfig = CompressConfig(),
        chain: Chain | None = None, reported_input_tokens: int | None = None,
        count_tokens: Callable[[str], int] = estimate_tokens, context_window: int | None = None,
        now: float | None = None, on_epoch: Callable[[], None] | None = None) -> RunResult:
    """Compress one request. Never raises; on failure returns `body` itself. `context_window`:
    the model's context window in tokens when the caller knows it (tiers scale with it). `now`:
    when the request is sent, in seconds (`time.time()`; None: unknown), so a request that comes
    after the provider's cache expired re-decides for free (`compress.runner.epochs`). `on_epoch`:
    called once, before the run plans the whole request again (an epoch), so a caller with a
    latency budget can tell that long run from incremental work (the proxy); it changes nothing
    decided."""
    started = time.perf_counter()
    session.settle()  # the last run's trial, when the face did not judge it after that answer
    report = RunReport()
    try:
        out = _run(body, session, store, config, chain or Chain(), reported_input_tokens, count_tokens, report,
                   context_window, now, on_epoch)
    except RecursionError:
        log.warning("request nested too deeply to process; passed through")
        report.error = "JSON nested too deeply to process"
        out = body
    except Exception as exc:  # noqa: BLE001 - fail open
        log.warning("compression failed, request passed through: %s: %s", type(exc).__name__, exc)
        report.error = f"{type(exc).__name__}: {exc}"[:500]
        report.mode = "passthrough"
        out = body
    report.duration_ms = (time.perf_counter() - started) * 1000
    return RunResult(out, report)


def _run(body: Any, session: Session, store: CCRWriter | None, config: CompressConfig, chain: Chain,
         reported: int | None, count: Callable[[str], int], report: RunReport, window: int | None = None,
         now: float | None = None, on_epoch: Callable[[], None] | None = None) -> Any:
    provider = detect(body)
    shape = SHAPES[provider]
    report.provider = provider
    if hidden := stored_history(shape, body):
        report.passthrough_reason = hidden
        return body
    prepared = session.take_prepared()
    field = shape.MESSAGES_FIELD
    thinking_kept = keeps_all_thinking(provider, body)
    client = body[field]
    plain = unmarked_messages(provider, client)  # cache breakpoints move every request
    hashes = session.hashing.hashes(plain)
    session.redaction = (config.redact_extra, config.redact_allow)
    frozen = known_prefix(hashes, session.records, plain) if session.header.provider == provider else 0
    known: list[Message] = []  # the known prefix's parsed messages, up to the first the session lacks
    for h in hashes[:frozen]:
        if (parsed := session.parsed.get(h)) is None:
            break
        known.append(parsed)
    request = from_provider(body if plain is client else {**body, field: plain}, provider, known,
                            PrefixScans(session.scans))
    messages = list(request.messages)
    report.provider = provider
    report.messages = len(messages)

    tokens = MessageTokens(count)
    raw_tokens = [session.records[hashes[i]].raw_tokens if i < frozen else tokens.message(m)
                  for i, m in enumerate(messages)]
    head = tokens.head(body, shape.HEAD_FIELDS)
    report.tokens_before = head + sum(raw_tokens)
    sent = [session.records[hashes[i]].out_tokens if i < frozen else n for i, n in enumerate(raw_tokens)]
    managed = managed_floor(body, messages, sent, head)
    report.provider_context = managed.reason
    thresholds = thresholds_for(request.model, config.tiers, config.model_tiers, window)
    # the context the model reads: what a compaction dropped does not count
    estimate = head + sum(raw_tokens[managed.dropped:])
    pressure = reported if reported is not None else estimate

    def tier_of(rendered: Sequence[int]) -> Tier:
        """The tier of a rendering of this request, its estimate scaled as the request's."""
        return thresholds.tier_for(round((head + sum(rendered[managed.dropped:])) * pressure / max(1, estimate)))

    # The tier models the host's compaction, which counts what the provider is sent: the session's
    # renderings of the messages it knows and the new ones whole, at the provider's count
    tier = tier_of(sent)
    report.tier = tier.label
    blocks = provider_blocks(messages, thinking_kept)
    tail = tail_start(messages, raw_tokens, blocks, config)
    life = cache_life(provider, cache_ttl(provider, body), config.cache_ttl, request.model)
    resent = first_resent(messages, frozen, thinking_kept)
    lookback = lookback_for(provider, config)
    cached_end = None if lookback is None else max(cached_prefixes(session, resent, life.any_prefix), default=None)
    planner = Planner(provider, messages, chain.active(tier, config), tail, tier, config, tokens, session.records,
                      hashes, thinking_kept, managed.floor, sum(raw_tokens), cached_end, lookback, session.scans)

    reason, pressed = forced_reason(session, provider, tier, frozen, tier)
    current_turn = messages[-1].turn if messages else 0
    later: Callable[[], None] | None = None
    if reason:
        if on_epoch is not None:
            on_epoch()
        plan = planner.plan(0, current_turn)
    else:
        plan = planner.plan(frozen, session.header.anchor_turn)
        last_end = max(session.request_ends, default=0)  # the provider still holds it whole, or 0
        last_end = last_end if resent >= last_end else 0
        session.forget_request_ends_after(resent)
        # Messages that left the protected tail since the last epoch were never compressed;
        # an epoch re-decides them when what it saves pays for what the provider writes again.
        choice = epoch_trial(messages, blocks, frozen, tail, session, hashes, config, thinking_kept, provider,
                             life.expired(session.header.last_request_at, now), life.any_prefix)
        if choice is not None:
            trial = Trial(planner, choice, plan, cached_prefixes(session, resent, life.any_prefix) if choice.cached_end
                          else [], current_turn, config, life, last_end, worth_deferring(provider, estimate, config),
                          not in_reach_next_time(choice, blocks, last_end, provider, config))
            if not trial.could_pay:
                pass  # no plan of it pays off: judging it would leave the session as it is
            elif trial.after_answer:  # judged by `Session.settle`, on the records as they are now
                trial.planner = replace(planner, records=dict(session.records))
                later = partial(_epoch_after_answer, session, store, trial, provider, tier, tier_of, hashes,
                                raw_tokens, plain)
            else:
                won, plan.next_trial_at = trial.judge()
                if won is not None:
                    plan, reason = won, trial.saving(won)

    _commit(store, plan)
    left = left_pressure(tier, tier_of(plan.out_tokens), pressed) if reason else session.header.tier
    _record(session, plan, provider, left, hashes, raw_tokens, reason, plain)
    _refresh_named(store, session, hashes)
    session.add_request_end(len(messages))
    if now is not None:
        session.set_last_request(now)
    session.parsed.update(zip(hashes, messages))
    session.deferred = later
    report.mode = "epoch" if reason or prepared else "incremental"
    report.epoch_reason = reason or (f"{prepared}, decided after the previous request" if prepared else "")
    report.frozen = 0 if reason else frozen
    report.tokens_after = head + plan.out_total
    report.ccr_written = len(plan.originals.entries)
    report.stages_saved, report.stage_ms = plan.saved, plan.stage_ms
    report.decisions, report.errors = plan.decisions, plan.errors
    rendered = remarked_messages(provider, plan.rendered, plain, client)
    if all(a is b for a, b in zip(rendered, client)):
        return body
    return {**body, field: rendered}


def _epoch_after_answer(session: Session, store: CCRWriter | None, trial: Trial, provider: str, tier: Tier,
                        tier_of: Callable[[Sequence[int]], Tier], hashes: list[str], raw_tokens: list[int],
                        raw_messages: list[Any]) -> None:
    """Judge `trial` (`Session.settle`); when it pays, its originals go to CCR and the session starts its
    epoch, as the run that made it would have (`Header.prepared` says so to the next run)."""
    won, retry_at = trial.judge()
    if won is None:
        if retry_at:
            session.set_next_trial(retry_at)
        return
    _commit(store, won)
    reason = trial.saving(won)
    _record(session, won, provider, left_pressure(tier, tier_of(won.out_tokens), False), hashes, raw_tokens, reason,
            raw_messages)
    # As after the same epoch taken during the run, the request the epoch was judged on counts as
    # a cached prefix, so the next request decides as it would then (it sends the epoch's rewrite)
    session.add_request_end(len(raw_tokens))
    session.header.prepared = reason  # written with the epoch's header


def _commit(store: CCRWriter | None, plan: Plan) -> None:
    """Put the originals `plan` cut into CCR, in one batch, before anything names them."""
    if store is not None and plan.originals.entries:
        with store.batch():
            for text, hint in plan.originals.entries.values():
                store.put(text, hint)
    elif plan.originals.entries:
        raise RuntimeError("stages wrote originals but no CCR store was given")


def _refresh_named(store: Any, session: Session, hashes: list[str]) -> None:
    """Renew the TTL of the CCR entries this request's markers name, when the store says it is
    time (a live session's old markers must not expire while it still sends them). A failure
    is logged: the request goes on."""
    if store is None or not hasattr(store, "refresh") or not store.refresh_due(session.header.touched_at):
        return
    try:
        session.set_touched(store.refresh(session.named_keys(hashes)))
    except Exception as exc:  # noqa: BLE001 - fail open: the markers still resolve until they expire
        log.warning("CCR refresh failed: %s: %s", type(exc).__name__, exc)


def _record(session: Session, plan: Plan, provider: str, pressure: int, hashes: list[str], raw_tokens: list[int],
            reason: str, raw_messages: list[Any]) -> None:
    """Remember the plan's renderings: as a new epoch when `reason` says so (leaving `pressure`,
    `compress.runner.epochs.left_pressure`), else appended."""
    new = {hashes[i]: plan.record(i, raw_tokens[i], raw_messages[i]) for i in range(plan.first_new, len(hashes))}
    if reason:
        kept = {h: session.records[h] for h in hashes[:plan.first_new]}
        session.start_epoch(provider, pressure, plan.anchor_turn, kept | new, unchanged=plan.first_new)
        return
    for h, record in new.items():
        session.add(h, record)
    if plan.next_trial_at:
        session.set_next_trial(plan.next_trial_at)
