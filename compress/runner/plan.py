"""One way to render a request: the active stages applied from a start message on, each
checked by the protocol guard, and what the session records of each message.

Messages before the start render as the session recorded them; the stages may change the
messages from the start up to the protected tail; ages count from the given anchor turn.
Messages before the planner's `floor` (what the provider itself drops or clears:
`compress.formats.requests.managed`) no stage changes: they render as the session recorded
them when it did, else as the client sent them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

from ccr.markers import find_markers
from compress.config import CompressConfig
from compress.formats.requests import render_message
from compress.model import REDACTED_THINKING, THINKING, Message, last_person_index
from compress.prefix_scans import PrefixScans
from compress.provider_cache import provider_blocks, sends_thinking
from compress.runner.message_tokens import MessageTokens
from compress.runner.protocol_guard import violation
from compress.stagekit.stage import PendingOriginals, Stage, StageContext, is_compressed
from compress.state.session import Record
from compress.tiers import Tier
from ground.jsonvalues import strings_in

log = logging.getLogger("ctxmill.compress")


@dataclass
class Plan:
    messages: list[Message]
    originals: PendingOriginals
    saved: dict[str, int]
    """Tokens each stage saved."""
    stage_ms: dict[str, float]
    decisions: list[tuple[int, str, str]]
    errors: list[str]
    anchor_turn: int = 0
    first_new: int = 0
    """Messages before it render as the session recorded them."""
    rendered: list[Any] = field(default_factory=list)
    out_tokens: list[int] = field(default_factory=list)
    out_total: int = 0
    settled: list[bool] = field(default_factory=list)
    compressible: list[int] = field(default_factory=list)
    next_trial_at: int = 0

    def record(self, i: int, raw_tokens: int, raw: Any) -> Record:
        """Message i's record; `raw` is the message as the client sent it (sealing reads it)."""
        rendered = self.rendered[i]
        keys = () if rendered is raw else marker_keys(rendered)
        return Record(rendered, raw_tokens, self.out_tokens[i], self.compressible[i], self.settled[i], keys=keys,
                      source=raw)


def marker_keys(rendered: Any) -> tuple[str, ...]:
    """The CCR keys named by the markers in a rendered message, in order, once each."""
    keys = (m.key for s in strings_in(rendered) if "ctxmill" in s for m in find_markers(s))
    return tuple(dict.fromkeys(k for k in keys if k))


@dataclass
class Planner:
    """Plans one request (`plan(start, anchor)` for each start the runner considers)."""

    provider: str
    messages: list[Message]
    stages: list[Stage]
    tail: int
    """First message of the protected tail."""
    tier: Tier
    config: CompressConfig
    tokens: MessageTokens
    records: dict[str, Record]
    """The session's records by prefix hash, as they were when the run began (a trial decided
    after the run's answer must not see the records the run itself added)."""
    hashes: list[str]
    thinking_kept: bool = False
    """The request keeps all earlier thinking (`StageContext.thinking_kept`)."""
    floor: int = 0
    """First message a stage may change: the provider drops or clears what comes before."""
    raw_tokens: int = 0
    """Tokens of the request's messages as the client sent them (the runner's count, without the
    head: `RunReport.tokens_before` less the system prompt and tools)."""
    cached_end: int | None = None
    """Messages in the newest prefix of this request the provider holds cached from an earlier
    request (`compress.runner.epochs.cached_prefixes`; None: none, or no `lookback` to reach it in)."""
    lookback: int | None = None
    """Content blocks back from a request's end the provider looks for that prefix
    (`compress.runner.epochs.lookback_for`; None: anywhere)."""
    scans: dict[Any, Any] = field(default_factory=dict)
    """The session's scan checkpoints (`Session.scans`), handed to the stages."""

    def plan(self, start: int, anchor: int) -> Plan:
        first = max(start, self.floor)
        n = len(self.messages)
        first, tail = min(first, n), max(0, min(self.tail, n))
        mutable = (False,) * first + (True,) * (tail - first) + (False,) * (n - max(first, tail))
        arriving = (False,) * first + (True,) * (n - first)
        plan = self._apply_stages(mutable, arriving, anchor, first)
        plan.anchor_turn = anchor
        plan.first_new = start
        for i, msg in enumerate(plan.messages):
            record = self._recorded(first, i)
            if record is not None:
                plan.rendered.append(record.rendered)
                plan.out_tokens.append(record.out_tokens)
            else:
                plan.rendered.append(render_message(self.provider, msg))
                plan.out_tokens.append(self.tokens.message(msg))
        plan.out_total = sum(plan.out_tokens)
        plan.settled = [True] * tail + [False] * (n - tail)
        plan.compressible = [0] * first + [self.tokens.compressible(m) for m in self.messages[first:]]
        return plan

    def _recorded(self, first: int, index: int) -> Record | None:
        """The session's record message `index` renders from in a plan whose stages start at
        `first` (None: it renders from the stages' output)."""
        return self.records.get(self.hashes[index]) if index < first else None

    @cached_property
    def unbilled(self) -> int:
        """Tokens of the raw request the provider does not bill: the thinking blocks it drops, of
        the assistant messages before the last person-written one (`sends_thinking`)."""
        last = last_person_index(self.messages)
        return sum(self.tokens.block(b) for i, m in enumerate(self.messages)
                   if not sends_thinking(i, last, self.thinking_kept)
                   for b in m.blocks if b.kind in (THINKING, REDACTED_THINKING))

    def saving(self, first: int, messages: list[Message]) -> int:
        """`StageContext.saving`: the raw request's tokens the provider bills less the tokens of
        the request rendered from `messages` in a plan whose stages start at `first`, each
        message counted as `plan` counts its `out_tokens` (the head, sent alike on both sides,
        cancels out). Dropped thinking counts on neither side: what stripping it saves is no
        saving (a rendering that keeps some still counts it, so the figure errs low)."""
        if self._out_of_reach(messages) and not self._out_of_reach(self.messages):
            return 0
        sent = 0
        for i, msg in enumerate(messages):
            record = self._recorded(first, i)
            sent += record.out_tokens if record is not None else self.tokens.message(msg)
        return self.raw_tokens - self.unbilled - sent

    def _out_of_reach(self, messages: list[Message]) -> bool:
        """Whether so many blocks follow the cached prefix in a request of `messages` that the
        provider no longer finds it (as `compress.runner.epochs.epoch_trial` counts reach)."""
        if self.cached_end is None or self.lookback is None:
            return False
        return sum(provider_blocks(messages, self.thinking_kept)[self.cached_end:]) >= self.lookback

    def _shown_strings(self, index: int) -> tuple[str, ...]:
        """`StageContext.shown_strings`: the strings of the session's rendering of message `index`."""
        record = self.records.get(self.hashes[index])
        return () if record is None or record.rendered is None else tuple(strings_in(record.rendered))

    def _shown_cut(self, index: int) -> bool:
        """`StageContext.shown_cut`: the session's rendering of message `index` holds a cut marker
        (`compress.stagekit.stage.is_compressed`: not one of thinned line numbers or removed injections)."""
        record = self.records.get(self.hashes[index])
        if record is None or not record.keys or record.rendered is None:
            return False
        return any(is_compressed(s) for s in strings_in(record.rendered) if "ctxmill" in s)

    def _apply_stages(self, mutable: tuple[bool, ...], arriving: tuple[bool, ...], anchor: int, first: int) -> Plan:
        """Each stage in turn; one that raises or breaks a protocol rule is dropped, with the
        originals it buffered. A stage that `decides_on_arrival` may change every message from
        the start on (`arriving`), the others only the `mutable` ones."""
        config = self.config
        originals = PendingOriginals(redact_extra=config.redact_extra, redact_allow=config.redact_allow)
        ctx = StageContext(config, self.tier, anchor, mutable, originals, self.tokens.count,
                           thinking_kept=self.thinking_kept, past_tail=mutable, shown_cut=self._shown_cut,
                           shown_strings=self._shown_strings, saving=partial(self.saving, first), unchanged=first,
                           scans=PrefixScans(self.scans))
        current = list(self.messages)
        saved: dict[str, int] = {}
        stage_ms: dict[str, float] = {}
        for stage in self.stages:
            ctx.mutable = arriving if stage.decides_on_arrival else mutable
            if not (any(ctx.mutable) or stage.appends_to_newest):
                continue
            t0 = time.perf_counter()
            ctx.stage = stage.name
            before_writes = dict(originals.entries)
            try:
                result = stage.run(current, ctx)
                broken = violation(current, result, ctx.mutable, stage)
            except Exception as exc:  # noqa: BLE001 - skip a failing stage
                broken = f"raised {type(exc).__name__}: {exc}"
            if broken:
                message = f"stage {stage.name} dropped for this run: {broken}"
                log.warning(message)
                ctx.errors.append(message)
                originals.entries = before_writes
            else:
                saved[stage.name] = sum(self.tokens.message(a) - self.tokens.message(b)
                                        for a, b in zip(current, result) if a is not b)
                current = result
            stage_ms[stage.name] = round((time.perf_counter() - t0) * 1000, 3)
        return Plan(current, originals, saved, stage_ms, ctx.decisions, ctx.errors)
