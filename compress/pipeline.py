"""The per-turn transform: the ordered chain of stages and the runner.

`run(body, session=..., store=...)` reads an Anthropic or OpenAI request, compresses it with
the stages active at its tier, and returns the new body and a report. It holds:

- Deterministic: same body and session state -> identical output bytes.
- Cache-stable: between epochs a message prefix the session has seen renders exactly as
  before; only new messages are processed, and ages count from the epoch's anchor turn.
  A new epoch starts on a new session, a tier change, or when a re-run saves enough for the
  cache writes it causes (`_Runner.epoch_start`): any saving of `window_epoch_savings` when
  the provider must write the whole request anyway or the change lies after a cached request
  within its lookback window, else `epoch_savings_threshold` tokens; each must pay back.
- Protocol-safe: every stage's output is checked (message count, tool ids and names, user
  text, tool inputs, frozen and protected messages); a stage that breaks a rule is dropped
  for that run and logged.
- Lossless: originals go to CCR and are committed before the body is returned.
- Fail open: nothing raises out of `run`; on any failure the original body comes back.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import xxhash

from compress.config import CompressConfig
from compress.costmodel import READ_PRICE, WRITE_PRICE
from compress.formats.requests import detect, from_provider, render_message
from compress.model import (
    IMAGE,
    REDACTED_THINKING,
    TEXT,
    THINKING,
    TOOL_RESULT,
    TOOL_USE,
    Block,
    Message,
    last_person_index,
)
from compress.session import Record, Session
from compress.stage import PendingOriginals, Stage, StageContext
from compress.stages import (
    compress_prose,
    crush_json,
    dedup_tool_calls,
    nudges,
    purge_errors,
    strip_injections,
    strip_reasoning,
    supersede_inputs,
    trim_outputs,
)
from compress.tiers import Tier, thresholds_for
from compress.tokens import estimate_tokens
from ground.jsonbytes import dumps

log = logging.getLogger("ctxmill.compress")

DEFAULT_STAGES: tuple[Stage, ...] = (
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

IMAGE_TOKENS = 1_600
"""Tokens charged for an image block (a ~1.2 megapixel image at width*height/750)."""


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

    def disable(self, *names: str) -> "Chain":
        for name in names:
            self._index(name)
            self._disabled.add(name)
        return self

    def enable(self, *names: str) -> "Chain":
        for name in names:
            self._index(name)
            self._disabled.discard(name)
        return self

    def before(self, name: str, stage: Stage) -> "Chain":
        self._stages.insert(self._index(name), stage)
        return self

    def after(self, name: str, stage: Stage) -> "Chain":
        self._stages.insert(self._index(name) + 1, stage)
        return self

    def replace(self, name: str, stage: Stage) -> "Chain":
        self._stages[self._index(name)] = stage
        return self

    def push(self, stage: Stage) -> "Chain":
        self._stages.append(stage)
        return self

    def active(self, tier: Tier, config: CompressConfig) -> list[Stage]:
        off = self._disabled | set(config.disabled_stages)
        return [s for s in self._stages if s.name not in off and s.min_tier <= tier]


@dataclass
class RunReport:
    provider: str = ""
    tier: str = ""
    mode: str = "passthrough"  # epoch | incremental | passthrough
    epoch_reason: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    messages: int = 0
    frozen: int = 0
    stages_saved: dict[str, int] = field(default_factory=dict)
    stage_ms: dict[str, float] = field(default_factory=dict)
    decisions: list[tuple[int, str, str]] = field(default_factory=list)
    ccr_written: int = 0
    errors: list[str] = field(default_factory=list)
    error: str = ""
    duration_ms: float = 0.0

    def summary_line(self) -> str:
        if self.error:
            return f"passed through unchanged: {self.error}"
        saved = self.tokens_before - self.tokens_after
        pct = 100.0 * saved / self.tokens_before if self.tokens_before else 0.0
        applied = ", ".join(f"{k} {-v:+,}" for k, v in self.stages_saved.items() if v) or "none"
        epoch = f" ({self.epoch_reason})" if self.mode == "epoch" else ""
        return (f"{self.tokens_before:,} → {self.tokens_after:,} tokens (-{pct:.1f}%) · tier {self.tier}"
                f" · {self.mode}{epoch} · stages: {applied} · {self.ccr_written} CCR entries"
                f" · {self.duration_ms:.1f} ms")

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider, "tier": self.tier, "mode": self.mode,
            "epoch_reason": self.epoch_reason, "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after, "messages": self.messages, "frozen": self.frozen,
            "stages_saved": self.stages_saved, "stage_ms": self.stage_ms,
            "decisions": [{"message": i, "stage": s, "decision": d} for i, s, d in self.decisions],
            "ccr_written": self.ccr_written, "errors": self.errors, "error": self.error,
            "duration_ms": round(self.duration_ms, 3),
        }


@dataclass
class RunResult:
    body: Any
    report: RunReport


def block_tokens(b: Block, count: Callable[[str], int]) -> int:
    """Input tokens of one block as the pipeline and the replay count them."""
    if b.kind in (TEXT, THINKING):
        return count(b.text)
    if b.kind == TOOL_USE:
        value = b.input if isinstance(b.input, str) else dumps(b.input).decode()
        return 8 + count(b.tool_name) + count(value)
    if b.kind == TOOL_RESULT:
        return 4 + sum(block_tokens(p, count) for p in b.parts)
    if b.kind == IMAGE:
        return IMAGE_TOKENS
    if b.kind == REDACTED_THINKING:
        return len(str(b.raw.get("data", ""))) // 4 if isinstance(b.raw, dict) else 0
    return count(dumps(b.raw).decode())


MESSAGE_OVERHEAD = 4
"""Tokens charged per message besides its blocks."""


class CCRWriter:
    """What the runner needs of a CCR store: a batch of puts committed as one transaction."""

    def batch(self) -> Any: ...  # pragma: no cover - protocol
    def put(self, text: str, hint: str | None = None) -> str: ...  # pragma: no cover


def run(body: Any, *, session: Session, store: CCRWriter | None, config: CompressConfig = CompressConfig(),
        chain: Chain | None = None, reported_input_tokens: int | None = None,
        count_tokens: Callable[[str], int] = estimate_tokens) -> RunResult:
    """Compress one request. Never raises; on failure returns `body` itself."""
    started = time.perf_counter()
    report = RunReport()
    try:
        out = _Runner(config, chain or Chain(), count_tokens, report).run(body, session, store, reported_input_tokens)
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


def prefix_hashes(raw_messages: list[Any]) -> list[str]:
    """Hash of each message prefix: equal hashes mean equal messages up to and including it."""
    out = []
    prev = b""
    for msg in raw_messages:
        h = xxhash.xxh3_128(prev)
        h.update(dumps(msg))
        prev = h.digest()
        out.append(h.hexdigest())
    return out


class _CountOnce:
    """`count(text)`, remembered per str object for long texts: a run counts the same original
    in several places (its block, then a stage's saving rule)."""

    LONG = 2_048

    def __init__(self, count: Callable[[str], int]) -> None:
        self._count = count
        self._seen: dict[int, tuple[str, int]] = {}

    def __call__(self, text: str) -> int:
        if len(text) < self.LONG:
            return self._count(text)
        seen = self._seen.get(id(text))
        if seen is not None and seen[0] is text:
            return seen[1]
        n = self._count(text)
        self._seen[id(text)] = (text, n)
        return n


class _Runner:
    def __init__(self, config: CompressConfig, chain: Chain, count: Callable[[str], int], report: RunReport):
        self.config = config
        self.chain = chain
        self.count = _CountOnce(count)
        self.report = report
        self._tokens: dict[int, tuple[Message, int]] = {}
        self._block_tokens: dict[int, tuple[Block, int]] = {}

    # -- token accounting ------------------------------------------------------------

    def block_tokens(self, b: Block) -> int:
        """`block_tokens(b)`, counted once per block object (blocks are immutable)."""
        cached = self._block_tokens.get(id(b))
        if cached is not None and cached[0] is b:
            return cached[1]
        n = block_tokens(b, self.count)
        self._block_tokens[id(b)] = (b, n)
        return n

    def message_tokens(self, msg: Message) -> int:
        cached = self._tokens.get(id(msg))
        if cached is not None and cached[0] is msg:
            return cached[1]
        if msg.role in ("system", "other"):
            n = MESSAGE_OVERHEAD + self.count(dumps(msg.raw).decode())
        else:
            n = MESSAGE_OVERHEAD + sum(self.block_tokens(b) for b in msg.blocks)
        self._tokens[id(msg)] = (msg, n)
        return n

    def compressible_tokens(self, msg: Message) -> int:
        """Tokens in blocks some stage could shorten once the message is old."""
        n = 0
        for b in msg.blocks:
            if b.kind in (THINKING, REDACTED_THINKING, TOOL_RESULT) or (b.kind == TEXT and msg.role == "assistant"):
                n += self.block_tokens(b)
            elif b.kind == TOOL_USE:
                n += max(0, self.block_tokens(b) - 250)
        return n

    def overhead_tokens(self, raw: dict) -> int:
        parts = [raw[k] for k in ("system", "tools") if k in raw]
        return sum(self.count(dumps(p).decode()) for p in parts)

    # -- the run -----------------------------------------------------------------------

    def run(self, body: Any, session: Session, store: CCRWriter | None, reported: int | None) -> Any:
        provider = detect(body)
        hashes = prefix_hashes(body["messages"])
        header = session.header
        same_provider = header.provider == provider
        frozen = _known_prefix(hashes, session.records) if same_provider else 0
        known = list(itertools.takewhile(lambda m: m is not None, (session.parsed.get(h) for h in hashes[:frozen])))
        request = from_provider(body, provider, known)
        messages = list(request.messages)
        report = self.report
        report.provider = provider
        report.messages = len(messages)

        raw_tokens = [session.records[hashes[i]].raw_tokens if i < frozen else self.message_tokens(m)
                      for i, m in enumerate(messages)]
        overhead = self.overhead_tokens(body)
        report.tokens_before = overhead + sum(raw_tokens)
        thresholds = thresholds_for(request.model, self.config.tiers, self.config.model_tiers)
        tier = thresholds.tier_for(reported if reported is not None else report.tokens_before)
        report.tier = tier.label
        blocks = _provider_blocks(messages)
        tail = self.tail_start(messages, raw_tokens, blocks)

        if not session.records or not same_provider:
            reason = "new session"
        elif header.tier != int(tier):
            reason = f"tier {Tier(header.tier).label if header.tier >= 0 else '?'} → {tier.label}"
        elif frozen == 0:
            reason = "history changed"
        else:
            reason = ""

        current_turn = messages[-1].turn if messages else 0
        if reason:
            plan = self.plan(messages, 0, tail, tier, current_turn, session, hashes)
        else:
            plan = self.plan(messages, frozen, tail, tier, header.anchor_turn, session, hashes)
            # Messages that left the protected tail since the last epoch were never compressed;
            # an epoch re-decides them when what it saves pays for what the provider writes again.
            choice = self.epoch_start(messages, blocks, frozen, tail, session, hashes)
            if choice is not None:
                trial = self.plan(messages, choice.start, tail, tier, current_turn, session, hashes)
                if (plan.out_total - trial.out_total >= choice.needed
                        and self.pays_back(plan, trial, choice, current_turn)):
                    plan, reason = trial, f"saves {plan.out_total - trial.out_total:,} tokens"
                elif choice.read_end and not choice.cached_end:
                    plan.next_trial_at = choice.potential + choice.needed // 2

        if store is not None and plan.originals.entries:
            with store.batch():
                for text, hint in plan.originals.entries.values():
                    store.put(text, hint)
        elif plan.originals.entries:
            raise RuntimeError("stages wrote originals but no CCR store was given")

        self.apply_to_session(session, plan, provider, tier, hashes, raw_tokens, reason)
        session.add_request_end(len(messages))
        session.parsed.update(zip(hashes, messages))
        report.mode = "epoch" if reason else "incremental"
        report.epoch_reason = reason
        report.frozen = 0 if reason else frozen
        report.tokens_after = overhead + plan.out_total
        report.ccr_written = len(plan.originals.entries)
        report.stages_saved, report.stage_ms = plan.saved, plan.stage_ms
        report.decisions, report.errors = plan.decisions, plan.errors
        if all(a is b for a, b in zip(plan.rendered, body["messages"])):
            return body
        return {**body, "messages": plan.rendered}

    def tail_start(self, messages: list[Message], tokens: list[int], blocks: list[int]) -> int:
        """Index of the first message of the protected tail (which always holds the latest
        assistant message); `tokens` and `blocks` (`_provider_blocks`) per message."""
        c = self.config
        acc = turns = nblocks = 0
        i = len(messages)
        while i > 0 and not (turns >= c.protect_tail_turns and (
                acc >= c.protect_tail_tokens or (c.protect_tail_blocks and nblocks >= c.protect_tail_blocks))):
            i -= 1
            acc += tokens[i]
            nblocks += blocks[i]
            turns += messages[i].role == "assistant"
        last_assistant = max((j for j, m in enumerate(messages) if m.role == "assistant"), default=len(messages))
        return min(i, last_assistant)

    def epoch_start(self, messages: list[Message], blocks: list[int], frozen: int, tail: int, session: Session,
                    hashes: list[str]) -> "_EpochChoice | None":
        """Whether to try an epoch now, and from which message, or None.

        The provider reads the longest cached request that is still a prefix and ends within
        its last `cache_window_blocks` blocks ("read end"). When none is, it writes the whole
        request anyway: a re-run from the start costs nothing extra and must only save
        `window_epoch_savings`. Otherwise, when messages that left the protected tail since they
        were decided ("unsettled") lie after a cached request within the window, they are
        re-decided from there (only the blocks after it are written again; `window_epoch_savings`);
        else a re-run from the start makes the provider write everything and must save
        `epoch_savings_threshold`. Both must also pay back their cache writes (`pays_back`).
        """
        suffix = list(itertools.accumulate(reversed(blocks), initial=0))[::-1]
        changed = min(frozen, _first_dropped_thinking(messages, frozen))
        in_window = [e for e in session.request_ends
                     if e <= changed and suffix[e] < self.config.cache_window_blocks]
        if not in_window:
            return _EpochChoice(0, self.config.window_epoch_savings, 0, 0, 0)
        read_end = max(in_window)
        records = session.records
        unsettled = [i for i in range(min(frozen, tail)) if not records[hashes[i]].settled]
        if not unsettled:
            return None
        window = [i for i in unsettled if i >= min(in_window)]
        at_stake = sum(records[hashes[i]].compressible for i in window)
        if window and at_stake >= self.config.window_epoch_savings:
            cached_end = max(e for e in in_window if e <= window[0])
            return _EpochChoice(window[0], self.config.window_epoch_savings, cached_end, read_end, at_stake)
        potential = sum(records[hashes[i]].compressible for i in unsettled)
        big = self.config.epoch_savings_threshold
        if potential >= max(big, session.header.next_trial_at):
            return _EpochChoice(0, big, 0, read_end, potential)
        return None

    def pays_back(self, plan: "_Plan", trial: "_Plan", choice: "_EpochChoice", turn: int) -> bool:
        """The trial's saving, read at `READ_PRICE` in each of the requests still expected
        (`epoch_horizon` × the assistant turns so far), outweighs the cache writes it causes: the
        provider writes the trial from `choice.cached_end` on instead of reading the current
        rendering up to `choice.read_end`."""
        if self.config.epoch_horizon <= 0:
            return True
        saved = plan.out_total - trial.out_total
        expected = max(1.0, self.config.epoch_horizon * turn)
        span = slice(choice.cached_end, choice.read_end)
        extra = WRITE_PRICE * sum(trial.out_tokens[span]) - READ_PRICE * sum(plan.out_tokens[span])
        return READ_PRICE * saved * expected >= extra

    def plan(self, messages: list[Message], start: int, tail: int, tier: Tier, anchor: int,
             session: Session, hashes: list[str]) -> "_Plan":
        """Messages before `start` render as the session recorded them; the stages may change
        the messages from `start` up to the protected tail; ages count from `anchor`."""
        mutable = tuple(start <= i < tail for i in range(len(messages)))
        plan = self.apply_chain(messages, mutable, tier, anchor)
        plan.anchor_turn = anchor
        plan.first_new = start
        for i, msg in enumerate(plan.messages):
            if i < start:
                record = session.records[hashes[i]]
                plan.rendered.append(record.rendered)
                plan.out_tokens.append(record.out_tokens)
            else:
                plan.rendered.append(render_message(plan.provider, msg))
                plan.out_tokens.append(self.message_tokens(msg))
        plan.out_total = sum(plan.out_tokens)
        plan.settled = [i < tail for i in range(len(messages))]
        plan.compressible = [0 if i < start else self.compressible_tokens(m) for i, m in enumerate(messages)]
        return plan

    def apply_chain(self, messages: list[Message], mutable: tuple[bool, ...], tier: Tier, anchor: int) -> "_Plan":
        provider = self.report.provider
        originals = PendingOriginals(redact_extra=self.config.redact_extra, redact_allow=self.config.redact_allow)
        ctx = StageContext(self.config, tier, anchor, mutable, originals, self.count)
        current = list(messages)
        saved: dict[str, int] = {}
        stage_ms: dict[str, float] = {}
        any_mutable = any(mutable)
        for stage in self.chain.active(tier, self.config):
            if not (any_mutable or stage.appends_to_newest):
                continue
            t0 = time.perf_counter()
            ctx.stage = stage.name
            before_writes = dict(originals.entries)
            try:
                result = stage.run(current, ctx)
                violation = _violation(current, result, mutable, stage)
            except Exception as exc:  # noqa: BLE001 - skip a failing stage
                violation = f"raised {type(exc).__name__}: {exc}"
            if violation:
                message = f"stage {stage.name} dropped for this run: {violation}"
                log.warning(message)
                ctx.errors.append(message)
                originals.entries = before_writes
            else:
                saved[stage.name] = sum(self.message_tokens(a) - self.message_tokens(b)
                                        for a, b in zip(current, result) if a is not b)
                current = result
            stage_ms[stage.name] = round((time.perf_counter() - t0) * 1000, 3)
        return _Plan(provider=provider, messages=current, originals=originals, saved=saved, stage_ms=stage_ms,
                     decisions=ctx.decisions, errors=ctx.errors)

    def apply_to_session(self, session: Session, plan: "_Plan", provider: str, tier: Tier,
                         hashes: list[str], raw_tokens: list[int], reason: str) -> None:
        def record(i: int) -> Record:
            return Record(plan.rendered[i], raw_tokens[i], plan.out_tokens[i], plan.compressible[i], plan.settled[i])

        if reason:
            kept = {h: session.records[h] for h in hashes[:plan.first_new]}
            session.start_epoch(provider, int(tier), plan.anchor_turn,
                                kept | {hashes[i]: record(i) for i in range(plan.first_new, len(hashes))},
                                unchanged=plan.first_new)
            return
        for i in range(plan.first_new, len(hashes)):
            session.add(hashes[i], record(i))
        if plan.next_trial_at:
            session.set_next_trial(plan.next_trial_at)


@dataclass(frozen=True, slots=True)
class _EpochChoice:
    start: int
    """First message to re-decide."""
    needed: int
    """Tokens the epoch must save at least."""
    cached_end: int
    """End of the cached request the provider reads after the epoch (0: none, all is written)."""
    read_end: int
    """... and without it (0: none; the provider writes the whole request anyway)."""
    potential: int
    """Compressible tokens at stake (unsettled messages)."""


@dataclass
class _Plan:
    provider: str
    messages: list[Message]
    originals: PendingOriginals
    anchor_turn: int = 0
    first_new: int = 0
    rendered: list[Any] = field(default_factory=list)
    out_tokens: list[int] = field(default_factory=list)
    out_total: int = 0
    settled: list[bool] = field(default_factory=list)
    compressible: list[int] = field(default_factory=list)
    next_trial_at: int = 0
    saved: dict[str, int] = field(default_factory=dict)
    stage_ms: dict[str, float] = field(default_factory=dict)
    decisions: list[tuple[int, str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _provider_blocks(messages: list[Message]) -> list[int]:
    """Content blocks of each message as the provider counts them for its cache lookback:
    thinking blocks only in the assistant messages after the last message a person wrote."""
    last_person = last_person_index(messages)
    return [sum(1 for b in m.blocks if i > last_person or b.kind not in (THINKING, REDACTED_THINKING)) or 1
            for i, m in enumerate(messages)]


def _first_dropped_thinking(messages: list[Message], frozen: int) -> int:
    """First of the already-sent messages the provider now renders differently: when a new
    person-written message arrived, it drops the thinking of the assistant messages since the
    previous one (len(messages) if none)."""
    if last_person_index(messages) < frozen:
        return len(messages)
    previous = last_person_index(messages[:frozen])
    return next((i for i in range(previous + 1, frozen) if messages[i].has_thinking), len(messages))


def _known_prefix(hashes: list[str], records: dict[str, Record]) -> int:
    """Length of the longest message prefix the session has a record for."""
    for k in range(len(hashes), 0, -1):
        if hashes[k - 1] in records:
            return k
    return 0


def _violation(before: list[Message], after: Any, mutable: tuple[bool, ...], stage: Stage) -> str:
    """Why a stage's output breaks a protocol rule, or '' if it keeps them all."""
    if not isinstance(after, list) or len(after) != len(before):
        return "changed the number of messages"
    for i, (a, b) in enumerate(zip(before, after)):
        if a is b:
            continue
        if stage.appends_to_newest and i == len(before) - 1:
            if _appends_one_text_block(a, b):
                continue
            return f"changed the newest message {i} other than by appending one text block"
        if not mutable[i]:
            return f"changed frozen or protected message {i}"
        if not isinstance(b, Message) or b.role != a.role or b.raw is not a.raw:
            return f"replaced message {i}"
        if _calls(a) != _calls(b):
            return f"changed tool ids or names in message {i}"
        if a.role == "user" and not _same_objects(_authored(a), _authored(b)):
            return f"changed user text in message {i}"
        if not stage.may_edit_inputs and not _same_objects(_inputs(a), _inputs(b)):
            return f"changed tool inputs in message {i}"
    return ""


def _appends_one_text_block(before: Message, after: Any) -> bool:
    """`after` is the user message `before` with one text block appended, all else the same objects."""
    return (isinstance(after, Message) and before.role == after.role == "user" and after.raw is before.raw
            and len(after.blocks) == len(before.blocks) + 1 and after.blocks[-1].kind == TEXT
            and _same_objects(list(before.blocks), list(after.blocks[:-1])))


def _calls(msg: Message) -> list[tuple[str, str, str]]:
    return [(b.kind, b.tool_id, b.tool_name) for b in msg.blocks if b.kind in (TOOL_USE, TOOL_RESULT)]


def _authored(msg: Message) -> list[Any]:
    return [b for b in msg.blocks if b.kind != TOOL_RESULT]


def _inputs(msg: Message) -> list[Any]:
    return [b.input for b in msg.blocks if b.kind == TOOL_USE]


def _same_objects(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
