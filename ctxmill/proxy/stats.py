"""A proxy session's stats and the files both sides of the proxy share.

The event loop (`sessions`) counts each session's `SessionStats`; the worker that owns the
session (`worker`) runs the pipeline, answers with a `RunSummary` and writes the stats it was
sent as `proxy-stats.json` beside the session's state, in `session_directory`. This module
imports no engine, so the event loop reads and writes stats without loading the pipeline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import orjson

from ground.files import atomic_write

log = logging.getLogger("ctxmill.proxy")

STATS_FILE = "proxy-stats.json"
STORE_FAILURE = "shared store failed: "
"""How a run's error starts when the shared store (Redis) failed; the request went as it came."""
STATS_DELAY = 1.0
"""Seconds a session's stats may wait in its worker's memory for an idle moment (`StatsBatch`)."""
CALIBRATION_RANGE = (0.25, 4.0)
"""The provider's reported prompt tokens over ctxmill's estimate, clamped to this range."""


def calibration_of(prompt_tokens: int, sent_tokens: int, tokens_per_byte: float) -> tuple[float, float] | None:
    """(calibration, tokens per byte) as a session's state keeps them, from the provider's count
    `prompt_tokens` of a request ctxmill estimated at `sent_tokens`; None when unknown. Rounded
    (calibration to 2 decimals, clamped to `CALIBRATION_RANGE`; tokens per byte to 3 digits)
    so the state changes when a tier might, not with every request."""
    if sent_tokens <= 0 or prompt_tokens <= 0 or tokens_per_byte <= 0:
        return None
    low, high = CALIBRATION_RANGE
    return round(min(high, max(low, prompt_tokens / sent_tokens)), 2), float(f"{tokens_per_byte:.3g}")


def session_directory(root: Path | None, key: str) -> Path | None:
    """Where a proxy session's state and stats live: `<root>/proxy-<key>/` (None: in memory)."""
    return root / f"proxy-{key}" if root is not None else None


@dataclass(frozen=True)
class RunSummary:
    """What the proxy needs of one run: the bytes to send (None: the original) and the stats."""

    data: bytes | None
    tokens_before: int = 0
    tokens_after: int = 0
    tier: str = ""
    mode: str = "passthrough"
    line: str = ""
    """The run report's one-line summary, for the proxy's request log."""
    error: str = ""
    model: str = ""
    stages: dict[str, int] = field(default_factory=dict)
    """Tokens each stage saved (`RunReport.stages_saved`), for the savings ledger."""
    rejected: int = 0
    """Records of the shared store that failed their integrity check and were ignored."""
    run_ms: float = 0.0
    """The worker's time for the run (parse, pipeline, serialisation)."""


@dataclass
class SessionStats:
    """One session's counts, as `ctxmill proxy --stats` shows them."""

    provider: str = ""
    requests: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    failures: int = 0
    store_failures: int = 0
    """Runs failed open because the shared store could not be reached (counted in failures too)."""
    epochs: int = 0
    """Runs that re-rendered history (each one costs a prompt-cache write)."""
    deferred: int = 0
    """Requests sent as they were because their compression missed the latency budget. The
    session's next compressed request costs one prompt-cache write (as an epoch does)."""
    deferred_behind: int = 0
    """Of `deferred`: those whose worker was too busy with other sessions' runs to start their run
    in time (more `--workers`, more cores or a larger budget help; an epoch's deferral does not
    count here)."""
    rejected_records: int = 0
    """Session records of the shared store that failed their integrity check (ignored)."""
    usage_reports: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    last_tier: str = ""

    def to_dict(self, key: str) -> dict[str, Any]:
        return {"session": key, **asdict(self), "saved": self.tokens_before - self.tokens_after}

    @classmethod
    def from_dict(cls, data: dict) -> SessionStats:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def write_stats(directory: Path, stats: bytes) -> None:
    """Write `stats` (SessionStats as JSON) beside the session's state; a failure is logged."""
    try:
        atomic_write(directory / STATS_FILE, stats, fsync=False)
    except OSError as exc:
        log.warning("session %s: stats not saved: %s", directory.name, exc)


def read_stats(directory: Path) -> SessionStats | None:
    """The stats a previous proxy wrote in `directory`, if any."""
    try:
        return SessionStats.from_dict(orjson.loads((directory / STATS_FILE).read_bytes()))
    except (OSError, orjson.JSONDecodeError, TypeError):
        return None


class StatsBatch:
    """The sessions' latest stats a worker has not written yet: one rename per session folder
    and batch, not one per request, done when the worker is idle. Must hold: stats wait at most
    `STATS_DELAY` for an idle moment and at most twice that under a load that never gives one;
    `write` (at shutdown too) leaves none unwritten. They are counts only (no decision reads
    them), so a crash loses at most the last seconds' counts, a clean shutdown none."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._latest: dict[Path, bytes] = {}
        self._since = 0.0

    def keep(self, directory: Path, stats: bytes) -> None:
        if not self._latest:
            self._since = self._clock()
        self._latest[directory] = stats

    def due(self, idle_for: Callable[[float], bool]) -> bool:
        """Whether to write now: stats are waiting and `idle_for(seconds)` (no job comes within
        the seconds left until they are due) says the worker is idle, or they are long overdue."""
        if not self._latest:
            return False
        left = self._since + STATS_DELAY - self._clock()
        return left < -STATS_DELAY or idle_for(max(0.0, left))

    def write(self) -> None:
        latest, self._latest = self._latest, {}
        for directory, data in latest.items():
            write_stats(directory, data)
