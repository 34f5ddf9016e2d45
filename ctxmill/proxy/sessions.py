"""Per-session proxy state on the event loop: stats and turn-taking.

Must hold:
- One `ProxySession` per session key in memory (bounded LRU; an entry in use is never evicted);
  its compression state lives in the worker that owns the session (`ctxmill.proxy.worker`).
- Requests of one session take turns (`entry.lock`, held while the app waits for the request's
  compression, at most the latency budget); different sessions run in parallel.
- At most one run of a session is in flight: a run that missed the budget goes on in the
  background (`entry.pending`); requests arriving meanwhile are sent as they are, without a run.
- Stats are mutated only on the event loop thread (`record_request`, `record_run`,
  `record_usage`). They travel with each run to the worker, which writes them beside the state
  (as of the previous response); `flush` writes them at shutdown, and a session seen for the
  first time reads them back, so a restarted proxy continues its stats.
- Anyone on the machine can send the proxy requests: at most `new_folders_per_hour` new session
  folders are created in any hour; beyond it a new session's state stays in memory only (it is
  still compressed), so a flood of made-up conversations cannot fill the disk.

Calibration from the provider's reported usage decides tiers, so it is session state, kept
where the state is (`ctxmill.proxy.session_state.SessionState.calibrate`), not here: every process and
replica that continues a session calibrates it the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from compress.formats.usage import Usage
from ctxmill.proxy.stats import STORE_FAILURE, RunSummary, SessionStats, read_stats, session_directory, write_stats

HOUR = 3600.0
log = logging.getLogger("ctxmill.proxy")


@dataclass
class Outcome:
    """A request's compression as far as it is known. `summary` is None while a deferred run
    is still going (filled in when it finishes) and when no run happened."""

    summary: RunSummary | None = None
    deferred: bool = False
    """The original bytes were sent (the run missed the budget, or another was in flight)."""
    behind: bool = False
    """Deferred because the session's worker was too far behind other sessions' runs to start
    this one in time (the run is dropped unrun; the session's next request catches up)."""
    error: str = ""
    pending: asyncio.Future | None = None
    """The run that missed the budget, still going."""

    @property
    def data(self) -> bytes | None:
        """The bytes to send upstream; None: the original."""
        return None if self.deferred or self.summary is None else self.summary.data

    @property
    def sent_tokens(self) -> int:
        """Our estimate of the request the upstream received; 0 when unknown (no calibration)."""
        s = self.summary
        if s is None or s.error or self.error:
            return 0
        return s.tokens_before if self.deferred else s.tokens_after

    def describe(self, budget_ms: float | None) -> str:
        """The log line's account of what was sent (`budget_ms`: the proxy's latency budget)."""
        if self.behind:
            return "deferred: its worker was busy with other sessions' runs and could not start it in time, sent as is"
        if self.deferred and self.pending is None:
            return "deferred: sent as is while the session's previous run finishes"
        if self.deferred:
            return f"deferred: compression not done within {budget_ms:g} ms, sent as is"
        if self.summary is None or self.error:
            return f"passed through unchanged: {self.error}"
        return self.summary.line

    def tokens_per_byte(self, body_size: int) -> float:
        """ctxmill's raw estimate per byte of the request (0 when unknown)."""
        s = self.summary
        return s.tokens_before / body_size if s is not None and not s.error and body_size else 0.0


class ProxySession:
    def __init__(self, key: str, directory: Path | None, stats: SessionStats) -> None:
        self.key = key
        self.directory = directory
        self.stats = stats
        self.lock = asyncio.Lock()
        self.active = 0
        self.pending: asyncio.Future | None = None
        """The session's deferred run while it is still going."""
        self.calibrated: tuple[float, float] | None = None
        """The calibration the session's state on disk holds, as this process last wrote it
        (`ctxmill.proxy.stats.calibration_of`): an unchanged one is not sent to the worker again."""
        self.warm = False
        """The session's last request went upstream compressed, so the provider's prompt cache holds
        the compressed prefix: sending the next one as it is would cost two cache writes of the
        whole prompt (that request's, and the next compressed one's) where waiting costs
        milliseconds; `Proxy.compress` waits longer for its run to start (`WARM_START_FACTOR`)."""
        self.epoch_rate = 0.0
        """Seconds per request byte of the session's last finished epoch run (0: none yet); see
        `epoch_estimate`."""

    def epoch_estimate(self, body_size: int) -> float:
        """Seconds an epoch on a request of `body_size` bytes would take, judging by the session's
        last one (0: no epoch finished yet)."""
        return self.epoch_rate * body_size

    def stats_bytes(self) -> bytes | None:
        """The stats for the worker to write beside the state (None: nothing to write)."""
        return orjson.dumps(asdict(self.stats)) if self.directory is not None and self.stats.requests else None

    def save_stats(self) -> None:
        if (data := self.stats_bytes()) is not None:
            write_stats(self.directory, data)  # type: ignore[arg-type]

    def load_stats(self) -> None:
        """The stats a previous proxy wrote, if any (read once, when the session is first seen)."""
        saved = read_stats(self.directory)  # type: ignore[arg-type]
        if saved is not None:
            self.stats = saved

    # -- event loop ----------------------------------------------------------------

    def record_request(self, provider: str, body_size: int, outcome: Outcome) -> None:
        s = self.stats
        s.provider = provider
        s.requests += 1
        s.deferred += outcome.deferred
        s.deferred_behind += outcome.behind
        self.warm = outcome.data is not None
        if outcome.summary is not None or outcome.error:
            self.record_run(body_size, outcome)

    def record_run(self, body_size: int, outcome: Outcome) -> None:
        """Token stats of a finished run (of a deferred request: what it would have saved is not
        counted, the original was sent)."""
        s = self.stats
        summary = outcome.summary
        s.rejected_records += summary.rejected if summary is not None else 0
        if outcome.error or summary is None or summary.error:
            s.failures += 1
            s.store_failures += summary is not None and summary.error.startswith(STORE_FAILURE)
            return
        s.tokens_before += summary.tokens_before
        s.tokens_after += summary.tokens_before if outcome.deferred else summary.tokens_after
        s.last_tier = summary.tier
        s.epochs += summary.mode == "epoch"
        if summary.mode == "epoch" and body_size and summary.run_ms:
            self.epoch_rate = summary.run_ms / 1000 / body_size

    def record_usage(self, usage: Usage) -> None:
        s = self.stats
        s.usage_reports += 1
        s.input_tokens += usage.input
        s.cache_read_tokens += usage.cache_read
        s.cache_write_tokens += usage.cache_write
        s.output_tokens += usage.output


class SessionPool:
    def __init__(self, root: Path | None, max_sessions: int, max_stats: int, new_folders_per_hour: int = 100,
                 clock=time.monotonic) -> None:
        self.root = root
        self.max_sessions = max_sessions
        self.max_stats = max(max_stats, max_sessions)
        self.new_folders_per_hour = new_folders_per_hour
        self._clock = clock
        self._created: deque[float] = deque()
        self._quiet_until = float("-inf")
        self._live: OrderedDict[str, ProxySession] = OrderedDict()
        self._stats: OrderedDict[str, SessionStats] = OrderedDict()

    @contextlib.asynccontextmanager
    async def use(self, key: str):
        """The session's entry, held under its lock (requests of one session take turns)."""
        entry = self._entry(key)
        entry.active += 1
        try:
            async with entry.lock:
                yield entry
        finally:
            entry.active -= 1

    def _entry(self, key: str) -> ProxySession:
        entry = self._live.get(key)
        if entry is None:
            known = self._stats.get(key)
            entry = self._live[key] = ProxySession(key, self._directory(key), known or SessionStats())
            if known is None and entry.directory is not None:
                entry.load_stats()
        self._live.move_to_end(key)
        self._stats[key] = entry.stats
        self._stats.move_to_end(key)
        self._evict()
        return entry

    def _directory(self, key: str) -> Path | None:
        """The session's folder; None (memory only) for a new one past the hour's allowance."""
        directory = session_directory(self.root, key)
        if directory is None or directory.is_dir():
            return directory
        now = self._clock()
        while self._created and now - self._created[0] >= HOUR:
            self._created.popleft()
        if len(self._created) >= self.new_folders_per_hour:
            if self._quiet_until <= now:  # one line an hour, not one per request
                log.warning("new sessions kept in memory only: %d new session folders within the hour "
                            "(new_sessions_per_hour)", len(self._created))
                self._quiet_until = now + HOUR
            return None
        self._created.append(now)
        return directory

    def _evict(self) -> None:
        for key in [k for k, e in self._live.items() if not e.active][: max(0, len(self._live) - self.max_sessions)]:
            del self._live[key]
        while len(self._stats) > self.max_stats:
            self._stats.popitem(last=False)

    def flush(self) -> None:
        """Write every live session's stats (at shutdown, after the workers stopped)."""
        for entry in self._live.values():
            entry.save_stats()

    def snapshot(self) -> list[dict[str, Any]]:
        """Stats of the sessions seen, most recently used first."""
        return [s.to_dict(k) for k, s in reversed(self._stats.items())]
