"""Replay a recorded session through the pipeline, turn by turn, and measure it honestly.

Request k holds everything the agent had up to its k-th model call. Each request runs through
`compress.pipeline.run` with ONE in-memory session and ONE in-memory CCR store, as a live
agent would, and both the raw and the compressed request are priced with the same exact token
counter and the same prompt-cache model (`compress.costmodel`). Reported per session:
tokens raw vs compressed (sum, peak), tiers and epochs, modelled cache cost and its ratio,
host compactions, retention of what must survive, pipeline time, and, where the recording
has provider usage, how close the raw model comes to it.

Token accounting (`RequestAccountant`): a request is its head (system prompt, tools) plus its
content blocks, 4 tokens per message on top; thinking blocks count only in the latest
assistant turn (assistant messages after the last message a person wrote), as the provider
drops earlier ones. Blocks are counted once per distinct content (cached by message object
and by content hash), so a whole session costs time linear in its size per request.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import xxhash

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.costmodel import READ_PRICE, WRITE_PRICE, CacheCost, PromptCache, compaction_events
from compress.formats.requests import SHAPES, from_provider
from compress.formats.sessions.transcript import Transcript
from compress.message_tokens import MESSAGE_OVERHEAD, block_tokens
from compress.model import REDACTED_THINKING, THINKING, TOOL_RESULT, TOOL_USE, Block, Message, last_person_index
from compress.pipeline import Chain, run
from compress.session import Session
from compress.tokens import TokenCounter, get_counter
from compress.vocab.calls import touched_files
from compress.vocab.signals import first_error_line, is_failed_result
from compress.vocab.touches import CREATE, EDIT, WRITE
from ground.jsonbytes import dumps
from ground.jsonvalues import strings_in

_WRITTEN = frozenset({WRITE, EDIT, CREATE})

RECENT_TURNS = 10
"""Retention is also reported for what the last RECENT_TURNS assistant turns produced."""


# -- pricing requests ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _MessageInfo:
    has_user_text: bool
    is_assistant: bool
    keys: tuple[int, ...]
    tokens: tuple[int, ...]
    thinking: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class Priced:
    tokens: int
    cache: CacheCost


class RequestAccountant:
    """Prices the requests of one side (raw, compressed, a peer) of one session."""

    def __init__(self, provider: str, counter: TokenCounter, cache: dict | None = None) -> None:
        self.parse = SHAPES[provider].parse_message
        self.count = counter.count
        self.cache = PromptCache()
        self.sizes: list[int] = []
        self._by_id: dict[int, tuple[Any, _MessageInfo]] = {}
        self._by_content: dict[int, _MessageInfo] = cache if cache is not None else {}
        self._heads: dict[bytes, tuple[int, int]] = {}

    def _info(self, raw: Any) -> _MessageInfo:
        hit = self._by_id.get(id(raw))
        if hit is not None and hit[0] is raw:
            return hit[1]
        data = dumps(raw)
        digest = xxhash.xxh3_64_intdigest(data)
        info = self._by_content.get(digest)
        if info is None:
            info = self._measure(self.parse(raw), data)
            self._by_content[digest] = info
        self._by_id[id(raw)] = (raw, info)
        return info

    def _measure(self, msg: Message, data: bytes) -> _MessageInfo:
        if not msg.blocks:
            keys: tuple[int, ...] = (xxhash.xxh3_64_intdigest(data),)
            tokens: tuple[int, ...] = (MESSAGE_OVERHEAD + self.count(data.decode("utf-8", "replace")),)
            return _MessageInfo(False, msg.role == "assistant", keys, tokens, (False,))
        keys = tuple(xxhash.xxh3_64_intdigest(dumps(b.raw if b.raw is not None else b.text)) for b in msg.blocks)
        counts = [block_tokens(b, self.count) for b in msg.blocks]
        thinking = tuple(b.kind in (THINKING, REDACTED_THINKING) for b in msg.blocks)
        counts[thinking.index(False) if False in thinking else 0] += MESSAGE_OVERHEAD
        return _MessageInfo(msg.has_user_text, msg.role == "assistant", keys, tuple(counts), thinking)

    def _head(self, body: dict) -> tuple[int, int]:
        data = dumps({k: body[k] for k in ("system", "tools") if k in body})
        head = self._heads.get(data)
        if head is None:
            head = (xxhash.xxh3_64_intdigest(data), self.count(data.decode()) if len(data) > 2 else 0)
            self._heads[data] = head
        return head

    def add(self, body: dict) -> Priced:
        infos = [self._info(m) for m in body["messages"]]
        last_person = last_person_index(infos)
        keys: list[int] = []
        tokens: list[int] = []
        for i, info in enumerate(infos):
            if any(info.thinking) and not (info.is_assistant and i > last_person):
                for key, n, thinking in zip(info.keys, info.tokens, info.thinking):
                    if not thinking:
                        keys.append(key)
                        tokens.append(n)
            else:
                keys.extend(info.keys)
                tokens.extend(info.tokens)
        head_key, head_tokens = self._head(body)
        cost = self.cache.add(keys, tokens, head_key, head_tokens)
        total = head_tokens + sum(tokens)
        self.sizes.append(total)
        return Priced(total, cost)


@dataclass
class SideStats:
    """Totals of one side of a replay."""

    tokens_sum: int = 0
    tokens_peak: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    compactions: int = 0

    def add(self, priced: Priced) -> None:
        self.tokens_sum += priced.tokens
        self.tokens_peak = max(self.tokens_peak, priced.tokens)
        self.cache_read += priced.cache.read
        self.cache_write += priced.cache.write
        self.cost += priced.cache.cost

    def finish(self, sizes: list[int]) -> "SideStats":
        """`sizes`: each request's tokens as the host sees them (plus any unseen head)."""
        self.compactions = compaction_events(sizes)
        self.cost = round(self.cost, 1)
        return self


# -- retention --------------------------------------------------------------------------------


@dataclass
class Retained:
    total: int = 0
    visible: int = 0
    recoverable: int = 0
    recent: int = 0
    recent_visible: int = 0

    def add(self, visible: bool, recoverable: bool, recent: bool) -> None:
        self.total += 1
        self.visible += visible
        self.recoverable += visible or recoverable
        self.recent += recent
        self.recent_visible += recent and visible


@dataclass
class Retention:
    errors: Retained = field(default_factory=Retained)
    paths: Retained = field(default_factory=Retained)
    last_request: Retained = field(default_factory=Retained)
    missing: list[str] = field(default_factory=list)

    def _sum(self, name: str) -> int:
        return sum(getattr(r, name) for r in (self.errors, self.paths, self.last_request))

    def fraction(self, name: str, total: str = "total") -> float:
        n = self._sum(total)
        return round(self._sum(name) / n, 4) if n else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"errors": asdict(self.errors), "paths": asdict(self.paths), "last_request": asdict(self.last_request),
                "recoverable": self.fraction("recoverable"), "visible": self.fraction("visible"),
                "recent_visible": self.fraction("recent_visible", "recent"), "missing": self.missing[:20]}


def _visible_text(messages: tuple[Message, ...]) -> str:
    out: list[str] = []
    for msg in messages:
        for b in msg.blocks:
            if b.kind == TOOL_RESULT:
                out.append(b.result_text)
            elif b.kind == TOOL_USE:
                out.extend(strings_in(b.input))
            else:
                out.append(b.text)
    return "\n".join(out)


def _recoverable_text(visible: str, store: CCRStore) -> str:
    """Every original reachable through the CCR keys in `visible`, following nested markers."""
    seen: set[str] = set()
    found: list[str] = []
    todo = [m.key for m in find_markers(visible)]
    while todo:
        key = todo.pop()
        if key in seen:
            continue
        seen.add(key)
        lookup = store.get(key)
        if lookup.ok and lookup.text:
            found.append(lookup.text)
            todo.extend(m.key for m in find_markers(lookup.text))
    return "\n".join(found)


def _error_line(block: Block) -> str | None:
    text = block.result_text
    line = first_error_line(text)
    if line:
        return line
    return next((s.strip() for s in text.splitlines() if s.strip()), None)


def check_retention(raw_body: dict, compressed_body: dict, store: CCRStore) -> Retention:
    """Tool errors' first lines, written or edited paths and the last user request of the raw
    request: are they visible in the compressed one, or recoverable through a CCR key in it?"""
    raw = from_provider(raw_body).messages
    visible = _visible_text(from_provider(compressed_body).messages)
    recoverable = _recoverable_text(visible, store)
    last_turn = raw[-1].turn if raw else 0
    retention = Retention()

    def check(bucket: Retained, item: str, msg: Message, what: str, carriers: tuple[str, ...] = ()) -> None:
        """`carriers`: texts that show the item when present verbatim (a shell command that
        writes a file names it relative to its `cd`, not by the normalised path)."""
        seen = item in visible or any(c in visible for c in carriers)
        back = seen or item in recoverable or any(c in recoverable for c in carriers)
        bucket.add(seen, back, last_turn - msg.turn < RECENT_TURNS)
        if not back:
            retention.missing.append(f"{what}: {item[:120]}")

    for msg in raw:
        for b in msg.blocks:
            if b.kind == TOOL_RESULT and is_failed_result(b) and (line := _error_line(b)):
                check(retention.errors, line, msg, "error")
            elif b.kind == TOOL_USE:
                for path in dict.fromkeys(t.path for t in touched_files(b.tool_name, b.input)
                                          if t.action in _WRITTEN):
                    name = path.rsplit("/", 1)[-1]
                    check(retention.paths, path, msg, "path",
                          tuple(x for x in strings_in(b.input) if name in x))
    person = next((m for m in reversed(raw) if m.has_user_text), None)
    if person is not None:
        text = "\n".join(b.text for b in person.blocks if b.text).strip()
        if text:
            check(retention.last_request, text, person, "last request")
    return retention


# -- provider usage ----------------------------------------------------------------------------


@dataclass
class UsageCheck:
    """How the raw replay's model compares with what the provider reported.

    The recording lacks the host's system prompt and tools, so their size (`unseen_head`) is
    estimated as the median gap between reported and modelled input; the unseen head is taken
    as cached after the first request."""

    compared: int = 0
    unseen_head: int = 0
    median_abs_error: float = 0.0
    """Median |modelled + unseen_head - reported| / reported input tokens, per request."""
    modelled_cost: float = 0.0
    reported_cost: float = 0.0
    cost_ratio: float = 0.0
    """modelled / reported cost over the compared requests (1.0 = the model is exact)."""
    modelled_read_share: float = 0.0
    reported_read_share: float = 0.0


def check_usage(pairs: list[tuple[Priced, Any]]) -> UsageCheck | None:
    """`pairs`: the raw pricing of a request and the provider usage of the same call."""
    if not pairs:
        return None
    unseen = max(0, round(statistics.median(u.prompt_total - p.tokens for p, u in pairs)))
    errors = [abs(p.tokens + unseen - u.prompt_total) / u.prompt_total for p, u in pairs if u.prompt_total]
    modelled = reported = read_m = read_r = total_m = total_r = 0.0
    for i, (p, u) in enumerate(pairs):
        head_read = unseen if i else 0
        modelled += p.cache.cost + READ_PRICE * head_read + WRITE_PRICE * (unseen - head_read)
        reported += u.input + READ_PRICE * u.cache_read + WRITE_PRICE * u.cache_write
        read_m += p.cache.read + head_read
        total_m += p.tokens + unseen
        read_r += u.cache_read
        total_r += u.prompt_total
    return UsageCheck(len(pairs), unseen, round(statistics.median(errors), 4) if errors else 0.0,
                      round(modelled, 1), round(reported, 1), round(modelled / reported, 4) if reported else 0.0,
                      round(read_m / total_m, 4) if total_m else 0.0, round(read_r / total_r, 4) if total_r else 0.0)


# -- the replay --------------------------------------------------------------------------------


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
