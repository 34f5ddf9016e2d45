"""Replay a recorded session through the pipeline, turn by turn, and measure it honestly.

Request k holds everything the agent had up to its k-th model call. Each request runs through
`compress.runner.pipeline.run` with ONE in-memory session and ONE in-memory CCR store, as a live
agent would, and both the raw and the compressed request are priced with the same exact token
counter and the same prompt-cache model (`replay.pricing`). Reported per session:
tokens raw vs compressed (sum, peak), tiers and epochs, modelled cache cost and its ratio,
host compactions, retention of what must survive, pipeline time, and, where the recording
has provider usage, how close the raw model comes to it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import SHAPES
from compress.formats.sessions.transcript import Transcript
from compress.model import Message
from compress.runner.pipeline import Chain, run
from compress.state.session import Session
from compress.token_counters import TokenCounter, get_counter
from replay.by_kind import CostByKind, table_lines
from replay.cap import DecideOnceCap
from replay.costmodel import HOST_200K, Compaction, Prices, head_cost, prices_for, share_with_head
from replay.needed import AGE_BUCKETS, CARRY_CALLS, MessageTexts, needs_of_call
from replay.pricing import Priced, RequestAccountant, SideStats
from replay.retention import RECENT_TURNS, Retention, check_retention
from replay.usage import ReportedSize, UsageCheck, check_usage, client_window


@dataclass
class ReplayReport:
    source: str
    format: str
    provider: str
    counter: str
    requests: int = 0
    prices: str = ""
    glued: bool = False
    raw: SideStats = field(default_factory=SideStats)
    compressed: SideStats = field(default_factory=SideStats)
    cap: SideStats = field(default_factory=SideStats)
    """The decide-once cap (`replay.cap`) priced the same way."""
    tiers: dict[str, int] = field(default_factory=dict)
    tier_changes: int = 0
    epochs: int = 0
    ccr_entries: int = 0
    pipeline_errors: int = 0
    ms_p50: float = 0.0
    ms_p95: float = 0.0
    ms_max: float = 0.0
    retention: Retention = field(default_factory=Retention)
    usage: UsageCheck | None = None
    unseen_head_cost: float = 0.0
    """What the host's system prompt and tools, which the recording lacks (`usage.unseen_head`
    tokens), cost over the session's requests: the same on every side, so left out of the
    sides' costs and ratios; `ratio(..., with_head=True)` adds it."""
    peers: dict[str, SideStats] = field(default_factory=dict)
    """Other compressors priced the same way, by name."""
    malformed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    host_compactions: int = 0
    host: Compaction = HOST_200K
    """Where the host of the session's model compacts (`replay.costmodel.Compaction`)."""
    seconds: float = 0.0
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    """Side -> kind of content -> modelled cost (`replay.by_kind`; empty unless asked)."""

    @property
    def cost_ratio(self) -> float:
        return self.ratio(self.compressed)

    def ratio(self, side: SideStats, effective: bool = False, with_head: bool = False) -> float:
        """Modelled (or effective) cost of `side` relative to the raw requests (`with_head`: both
        with the unseen system prompt and tools, `unseen_head_cost`)."""
        head = self.unseen_head_cost if with_head else 0.0
        cost = side.effective_cost if effective else side.cost
        return round(share_with_head(cost, self.raw.cost, head), 4) if self.raw.cost else 1.0

    def sides(self) -> dict[str, SideStats]:
        return {"raw": self.raw, "cap": self.cap, "ctxmill": self.compressed, **self.peers}

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["retention"] = self.retention.to_dict()
        out["cost_ratio"] = self.cost_ratio
        out["peer_cost_ratios"] = {name: self.ratio(side) for name, side in self.peers.items()}
        out["sides"] = {name: {"cost": side.cost, "effective_cost": side.effective_cost,
                               "cost_ratio": self.ratio(side), "effective_ratio": self.ratio(side, effective=True),
                               "needed": side.needed.to_dict()} for name, side in self.sides().items()}
        return out

    def render(self) -> str:
        r, c = self.raw, self.compressed

        def pct(a: float, b: float) -> str:
            return f"{100.0 * (b - a) / a:+.1f}%" if a else "n/a"

        ret = self.retention
        lines = [
            f"{self.source}  ({self.format}, {self.provider}, {self.requests} requests, "
            f"{'one glued history' if self.glued else 'histories as the host sent them'})",
            f"  tokens      raw sum {r.tokens_sum:,}  peak {r.tokens_peak:,}",
            f"              compressed sum {c.tokens_sum:,} ({pct(r.tokens_sum, c.tokens_sum)})"
            f"  peak {c.tokens_peak:,} ({pct(r.tokens_peak, c.tokens_peak)})",
            f"  cost        {self.prices}; effective = modelled + re-reads of lost needed lines",
        ]
        for name, side in self.sides().items():
            needed = side.needed
            ages = " ".join(f"{b} {needed.fraction(b):.0%}" for b in AGE_BUCKETS)
            lines.append(f"    {name:<10} modelled {self.ratio(side):.3f}  effective {self.ratio(side, True):.3f}"
                         f"  needed lines kept {needed.fraction():.1%} of {sum(needed.total.values())} ({ages})"
                         f"  compactions {side.compactions}")
        lines += [
            f"  compactions crossing {self.host.at // 1000}K, reset to {self.host.to // 1000}K"
            f"{'; with the unseen system+tools' if self.usage else ''}; "
            f"host compactions in the recording: {self.host_compactions}",
            f"  tiers       {', '.join(f'{k} {v}' for k, v in self.tiers.items()) or '-'}"
            f"  changes {self.tier_changes}  epochs {self.epochs}  CCR entries {self.ccr_entries}",
            f"  retention   recoverable {ret.fraction('recoverable'):.1%}  visible {ret.fraction('visible'):.1%}"
            f"  visible in last {RECENT_TURNS} turns {ret.fraction('recent_visible', 'recent'):.1%}"
            f"  (errors {ret.errors.total}, paths {ret.paths.total}, last request {ret.last_request.total})",
            f"  pipeline    p50 {self.ms_p50:.1f} ms  p95 {self.ms_p95:.1f} ms  max {self.ms_max:.1f} ms"
            f"  ({self.pipeline_errors} runs with errors)",
        ]
        if self.usage:
            u = self.usage
            lines.append(f"  vs usage    {u.compared} calls: modelled/reported cost {u.cost_ratio:.3f}, median input "
                         f"error {u.median_abs_error:.1%} (unseen system+tools ~{u.unseen_head:,}), cache-read share "
                         f"modelled {u.modelled_read_share:.1%} vs reported {u.reported_read_share:.1%}")
            if self.unseen_head_cost:
                lines.append(f"  with head   counting the unseen system+tools on every side: ctxmill modelled "
                             f"{self.ratio(self.compressed, with_head=True):.3f}, cap "
                             f"{self.ratio(self.cap, with_head=True):.3f}")
        if self.malformed:
            lines.append(f"  malformed   {self.malformed} unreadable lines or items skipped")
        for item in ret.missing[:5]:
            lines.append(f"  lost        {item}")
        lines += table_lines(self.by_kind, self.raw.cost)
        lines.append(f"  counted with {self.counter}; replay took {self.seconds:.1f} s")
        return "\n".join(lines)


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 2)


def replay(transcript: Transcript, *, source: str = "", config: CompressConfig = CompressConfig(),
           chain: Chain | None = None, counter: TokenCounter | None = None,
           progress: Callable[[int, int], None] | None = None,
           peers: dict[str, Callable[[dict], dict]] | None = None, glued: bool = False,
           thinking: str = "request", cache_ttl: str = "auto", by_kind: bool = False,
           times: bool = True) -> ReplayReport:
    """Replay every model call of `transcript` through the pipeline and report, side by side
    with the raw requests, the decide-once cap and `peers` (name -> raw body -> compressed body).

    The host's real histories are replayed: a compaction starts a new one whose first message is
    its summary (`glued`: one history across compactions, the summaries left out). `by_kind`:
    also where each side's cost goes, by kind of content (`ReplayReport.by_kind`). `cache_ttl`:
    the lifetime of Anthropic's cache ("5m", "1h"; "auto": what the recording reports writing,
    else 5 minutes); the pipeline is told it, and every request's recorded time, as a live
    client's would be (`compress.runner.pipeline.run`'s `now`), and every side is priced with it.
    The pipeline is told the context window the client ran with as its recording shows it
    (`replay.usage.client_window`), else the model table's applies, as in the proxy (the host's
    modelled compactions use the same window: `Compaction.for_model`); and, once a
    call's usage is recorded, the provider's count of the request (`replay.usage.ReportedSize`),
    as the proxy calibrates its own.
    `times` off: the session replayed as by a person who never pauses (or a harness that does not
    pass them): neither the pipeline nor the pricing sees a request time, so no cache expires."""
    started = time.perf_counter()
    counter = counter or get_counter(prefer_exact=True)
    if cache_ttl == "auto":
        cache_ttl = transcript.cache_ttl or "5m"
    config = replace(config, cache_ttl=cache_ttl)
    model = str(transcript.head.get("model", ""))
    prices = prices_for(transcript.provider, model, cache_ttl)
    window = client_window(transcript)
    report = ReplayReport(source, transcript.format, transcript.provider, counter.name, prices=prices.name,
                          malformed=transcript.malformed, skipped=dict(transcript.skipped),
                          host_compactions=transcript.host_compactions, glued=glued,
                          host=Compaction.for_model(model, window, bool(transcript.context_window)))
    shared: dict = {}

    def accountant() -> RequestAccountant:
        return RequestAccountant(transcript.provider, counter, shared, prices, thinking)

    peers = peers or {}
    sides = {name: accountant() for name in ("raw", "cap", "ctxmill", *peers)}
    report.peers = {name: SideStats() for name in peers}
    stats = {"raw": report.raw, "cap": report.cap, "ctxmill": report.compressed, **report.peers}
    store = CCRStore.in_memory()
    kinds = CostByKind(transcript.provider) if by_kind else None
    texts = MessageTexts()
    parse = SHAPES[transcript.provider].parse_message
    histories = [transcript] if glued else transcript.segments()
    total = sum(1 for h in histories for c in h.calls if c.index > 0)
    tiers: Counter = Counter()
    durations: list[float] = []
    usage_pairs: list[tuple[Priced, Any]] = []
    stamps: list[float | None] = []
    last_tier = None
    raw_body = out_body = None
    reported = ReportedSize()
    for history in histories:
        session = Session.memory()
        cap = DecideOnceCap(transcript.provider)
        for side in stats.values():
            side.needed.new_history()
        for call in (c for c in history.calls if c.index > 0):
            at = call.at if times else None
            stamps.append(at)
            raw_body = history.whole(call.index)
            raw_priced = sides["raw"].add(raw_body, at)
            result = run(raw_body, session=session, store=store, config=config, chain=chain, now=at,
                         context_window=window, reported_input_tokens=reported.next(raw_priced.tokens))
            reported.saw(raw_priced.tokens, call.usage if glued is False or not call.after_host_compaction else None)
            out_body = result.body
            rep = result.report
            durations.append(rep.duration_ms)
            tiers[rep.tier or "passthrough"] += 1
            report.tier_changes += last_tier is not None and rep.tier != last_tier
            last_tier = rep.tier
            report.epochs += rep.mode == "epoch"
            report.ccr_entries += rep.ccr_written
            report.pipeline_errors += bool(rep.error or rep.errors)
            bodies = {"raw": raw_body, "cap": cap(raw_body), "ctxmill": out_body,
                      **{name: compress_body(raw_body) for name, compress_body in peers.items()}}
            reply = _reply(history.messages, call.index, parse)
            raw_messages = history.messages[: call.index]
            needs = needs_of_call(raw_messages, reply, texts)
            for name, body in bodies.items():
                priced = raw_priced if name == "raw" else sides[name].add(body, at)
                stats[name].add(priced)
                if kinds:
                    kinds.add(name, body, priced, sides[name])
                if needs:
                    stats[name].needed.add(needs, texts.request(body[sides[name].field]),
                                           _reread(prices, priced, sides["raw"], raw_messages), len(durations))
                if name == "raw" and call.usage is not None and (glued is False or not call.after_host_compaction):
                    usage_pairs.append((priced, call.usage))
            if progress:
                progress(len(durations), total)
    report.requests = len(durations)
    report.by_kind = kinds.result() if kinds else {}
    report.usage = check_usage(usage_pairs)
    unseen = report.usage.unseen_head if report.usage else 0
    report.unseen_head_cost = head_cost(unseen, stamps, prices) if unseen else 0.0
    for name, side in stats.items():
        side.finish([n + unseen for n in sides[name].sizes], report.host)
    report.tiers = dict(tiers)
    report.ms_p50, report.ms_p95 = _percentile(durations, 0.5), _percentile(durations, 0.95)
    report.ms_max = round(max(durations), 2) if durations else 0.0
    if raw_body is not None and out_body is not None:
        report.retention = check_retention(raw_body, out_body, store)
    report.seconds = round(time.perf_counter() - started, 2)
    return report


def _reply(messages: list[Any], start: int, parse: Callable[[Any], Message]) -> Message | None:
    """The model's reply to the call that sent `messages[:start]`: its assistant messages from
    `start` on, as one (a Responses reply is several items: reasoning, text, calls)."""
    parts = []
    for raw in messages[start:]:
        msg = parse(raw)
        if msg.role != "assistant":
            break
        parts.append(msg)
    return parts[0].with_blocks([b for m in parts for b in m.blocks]) if parts else None


def _reread(prices: Prices, priced: Priced, raw: RequestAccountant, raw_messages: list[Any]) -> Callable[[set[int]], float]:
    """The price of re-reading what a call lost (see `replay.needed`)."""
    def cost(lost: set[int]) -> float:
        sources = sum(raw.message_tokens(raw_messages[i]) for i in lost)
        return prices.read * priced.tokens + (prices.write + CARRY_CALLS * prices.read) * sources
    return cost
