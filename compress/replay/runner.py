"""Replay a recorded session through the pipeline, turn by turn, and measure it honestly.

Request k holds everything the agent had up to its k-th model call. Each request runs through
`compress.pipeline.run` with ONE in-memory session and ONE in-memory CCR store, as a live
agent would, and both the raw and the compressed request are priced with the same exact token
counter and the same prompt-cache model (`compress.replay.pricing`). Reported per session:
tokens raw vs compressed (sum, peak), tiers and epochs, modelled cache cost and its ratio,
host compactions, retention of what must survive, pipeline time, and, where the recording
has provider usage, how close the raw model comes to it.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.sessions.transcript import Transcript
from compress.pipeline import Chain, run
from compress.provider_cache import READ_PRICE, WRITE_PRICE
from compress.replay.pricing import Priced, RequestAccountant, SideStats
from compress.replay.retention import RECENT_TURNS, Retention, check_retention
from compress.replay.usage import UsageCheck, check_usage
from compress.session import Session
from compress.tokens import TokenCounter, get_counter


@dataclass
class ReplayReport:
    source: str
    format: str
    provider: str
    counter: str
    requests: int = 0
    raw: SideStats = field(default_factory=SideStats)
    compressed: SideStats = field(default_factory=SideStats)
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
    peers: dict[str, SideStats] = field(default_factory=dict)
    """Other compressors priced the same way, by name."""
    malformed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    host_compactions: int = 0
    seconds: float = 0.0

    @property
    def cost_ratio(self) -> float:
        return self.ratio(self.compressed)

    def ratio(self, side: SideStats) -> float:
        """Modelled cost of `side` relative to the raw requests."""
        return round(side.cost / self.raw.cost, 4) if self.raw.cost else 1.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["retention"] = self.retention.to_dict()
        out["cost_ratio"] = self.cost_ratio
        out["peer_cost_ratios"] = {name: self.ratio(side) for name, side in self.peers.items()}
        return out

    def render(self) -> str:
        r, c = self.raw, self.compressed
        pct = (lambda a, b: f"{100.0 * (b - a) / a:+.1f}%" if a else "n/a")
        ret = self.retention
        lines = [
            f"{self.source}  ({self.format}, {self.provider}, {self.requests} requests)",
            f"  tokens      raw sum {r.tokens_sum:,}  peak {r.tokens_peak:,}",
            f"              compressed sum {c.tokens_sum:,} ({pct(r.tokens_sum, c.tokens_sum)})"
            f"  peak {c.tokens_peak:,} ({pct(r.tokens_peak, c.tokens_peak)})",
            f"  cache cost  raw {r.cost:,.0f}  compressed {c.cost:,.0f}  ratio {self.cost_ratio:.3f}"
            f"  (read {READ_PRICE}x, write {WRITE_PRICE}x base input price)",
            f"  compactions raw {r.compactions}  compressed {c.compactions}  (crossing 160K, reset to 20K"
            f"{'; with the unseen system+tools' if self.usage else ''}; host compactions in the recording: "
            f"{self.host_compactions})",
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
        for name, side in self.peers.items():
            lines.append(f"  peer        {name}: sum {side.tokens_sum:,}  peak {side.tokens_peak:,}  cost ratio "
                         f"{self.ratio(side):.3f}  compactions {side.compactions}")
        if self.malformed:
            lines.append(f"  malformed   {self.malformed} unreadable lines or items skipped")
        for item in ret.missing[:5]:
            lines.append(f"  lost        {item}")
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
           peers: dict[str, Callable[[dict], dict]] | None = None) -> ReplayReport:
    """Replay every model call of `transcript` through the pipeline and report.

    `peers`: other compressors (name -> raw body -> compressed body) priced alongside."""
    started = time.perf_counter()
    counter = counter or get_counter(prefer_exact=True)
    report = ReplayReport(source, transcript.format, transcript.provider, counter.name,
                          malformed=transcript.malformed, skipped=dict(transcript.skipped),
                          host_compactions=transcript.host_compactions)
    shared: dict = {}
    raw_side = RequestAccountant(transcript.provider, counter, shared)
    out_side = RequestAccountant(transcript.provider, counter, shared)
    peers = peers or {}
    peer_sides = {name: RequestAccountant(transcript.provider, counter, shared) for name in peers}
    report.peers = {name: SideStats() for name in peers}
    session = Session.memory()
    store = CCRStore.in_memory()
    calls = [c for c in transcript.calls if c.index > 0]
    tiers: Counter = Counter()
    durations: list[float] = []
    usage_pairs: list[tuple[Priced, Any]] = []
    last_tier = None
    raw_body = out_body = None
    for k, call in enumerate(calls):
        raw_body = {**transcript.head, "messages": transcript.messages[: call.index]}
        result = run(raw_body, session=session, store=store, config=config, chain=chain)
        out_body = result.body
        rep = result.report
        durations.append(rep.duration_ms)
        tiers[rep.tier or "passthrough"] += 1
        report.tier_changes += last_tier is not None and rep.tier != last_tier
        last_tier = rep.tier
        report.epochs += rep.mode == "epoch"
        report.ccr_entries += rep.ccr_written
        report.pipeline_errors += bool(rep.error or rep.errors)
        priced = raw_side.add(raw_body)
        report.raw.add(priced)
        report.compressed.add(out_side.add(out_body))
        for name, compress_body in peers.items():
            report.peers[name].add(peer_sides[name].add(compress_body(raw_body)))
        if call.usage is not None and not call.after_host_compaction:
            usage_pairs.append((priced, call.usage))
        if progress:
            progress(k + 1, len(calls))
    report.requests = len(calls)
    report.usage = check_usage(usage_pairs)
    unseen = report.usage.unseen_head if report.usage else 0
    report.raw.finish([n + unseen for n in raw_side.sizes])
    report.compressed.finish([n + unseen for n in out_side.sizes])
    for name, side in report.peers.items():
        side.finish([n + unseen for n in peer_sides[name].sizes])
    report.tiers = dict(tiers)
    report.ms_p50, report.ms_p95 = _percentile(durations, 0.5), _percentile(durations, 0.95)
    report.ms_max = round(max(durations), 2) if durations else 0.0
    if raw_body is not None:
        report.retention = check_retention(raw_body, out_body, store)
    report.seconds = round(time.perf_counter() - started, 2)
    return report
