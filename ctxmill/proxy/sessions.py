"""Per-session proxy state: the compress.Session, its lock, usage calibration and stats.

Must hold:
- One `ProxySession` per session key in memory (bounded LRU; an entry in use is never evicted),
  persisted under `<sessions_dir>/proxy-<key>/` so a restarted proxy continues the session.
- Requests of one session run one at a time (`entry.lock`, an asyncio lock held by the app
  around `compress` and until the previous `persist` finished); different sessions run in
  parallel. `compress` runs in a worker thread
  and holds the session directory's file lock (`state.lock`, the one `Session.open` takes), and
  reloads the state when another process changed it since this process last saved it.
- Stats are mutated only on the event loop thread (`record_run`, `record_usage`); they are
  written to `proxy-stats.json` beside the state with each run and at shutdown (`flush`).

Tier calibration. The pipeline's tier is defined on the size of the RAW request, but the
provider reports the size of the COMPRESSED request it received. For each response with usage:
    calibration = reported prompt tokens / our estimate of that compressed request (tokens_after)
(clamped to [0.25, 4]) — how much the provider's count exceeds our estimate, system, tools and
framing included. For the next request of the session, before the pipeline runs:
    reported_input_tokens = calibration × tokens_per_byte × len(raw body bytes)
where tokens_per_byte = tokens_before / body bytes of the session's previous request (our raw
estimate per byte, which changes slowly within one conversation). Until the first usage
report the pipeline uses its own estimate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections import OrderedDict
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Iterator

import orjson

from ccr.keys import make_key
from compress.config import CompressConfig
from compress.jsonbytes import dumps
from compress.pipeline import Chain, RunReport
from compress.pipeline import run as run_pipeline
from compress.session import STATE_FILE, Session
from ctxmill.proxy.usage import Usage

log = logging.getLogger("ctxmill.proxy")

STATS_FILE = "proxy-stats.json"
CALIBRATION_RANGE = (0.25, 4.0)


@dataclass
class SessionStats:
    provider: str = ""
    requests: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    failures: int = 0
    epochs: int = 0
    """Runs that re-rendered history (each one costs a prompt-cache write)."""
    usage_reports: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    last_tier: str = ""
    calibration: float | None = None
    tokens_per_byte: float | None = None

    def to_dict(self, key: str) -> dict[str, Any]:
        return {"session": key, **asdict(self), "saved": self.tokens_before - self.tokens_after}

    @classmethod
    def from_dict(cls, data: dict) -> "SessionStats":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class Outcome:
    """What `compress` produced: `data` None means send the original bytes."""

    data: bytes | None
    report: RunReport | None
    error: str = ""


class ProxySession:
    def __init__(self, key: str, directory: Path | None, stats: SessionStats) -> None:
        self.key = key
        self.directory = directory
        self.stats = stats
        self.lock = asyncio.Lock()
        self.active = 0
        self.saving: asyncio.Future | None = None
        self._session: Session | None = None
        self._signature: tuple[int, int] | None = None
        self._lock_file: Any = None

    # -- worker thread ---------------------------------------------------------------

    def compress(self, body: dict, body_size: int, *, store: Any, config: CompressConfig,
                 chain: Chain | None = None) -> Outcome:
        """Run the pipeline with this session's state. Never raises (fail open). The new state
        is written by `persist`, which the app runs while the request travels upstream."""
        try:
            with self._file_lock():
                session = self._current()
                result = run_pipeline(body, session=session, store=store, config=config, chain=chain,
                                      reported_input_tokens=self.calibrated_tokens(body_size))
            data = None if result.body is body else dumps(result.body)
        except Exception as exc:  # noqa: BLE001 - fail open: the original body is sent
            log.warning("session %s: compression failed, original sent: %s: %s",
                        self.key[:12], type(exc).__name__, exc)
            return Outcome(None, None, f"{type(exc).__name__}: {exc}"[:500])
        if result.report.error:
            return Outcome(None, result.report, result.report.error)
        return Outcome(data, result.report)

    def persist(self) -> None:
        """Write the state `compress` left in memory. If another process rewrote the state file
        since this one loaded it, theirs wins: ours is dropped and reloaded on the next run."""
        if self.directory is None or self._session is None:
            return
        try:
            with self._file_lock():
                if self._disk_signature() != self._signature:
                    self._session = None
                    log.warning("session %s: state changed by another process; reloading", self.key[:12])
                else:
                    self._session.save()
                    self._signature = self._disk_signature()
        except Exception as exc:  # noqa: BLE001 - fail open: the next run starts an epoch
            self._session = self._signature = None
            log.warning("session %s: state not saved: %s: %s", self.key[:12], type(exc).__name__, exc)
        self.save_stats()

    def calibrated_tokens(self, body_size: int) -> int | None:
        s = self.stats
        if s.calibration is None or s.tokens_per_byte is None:
            return None
        return round(s.calibration * s.tokens_per_byte * body_size)

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        if self.directory is None:
            yield
            return
        from filelock import FileLock

        if self._lock_file is None:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._lock_file = FileLock(str(self.directory / "state.lock"), thread_local=False)
        with self._lock_file:
            yield

    def _disk_signature(self) -> tuple[int, int] | None:
        try:
            st = (self.directory / STATE_FILE).stat()  # type: ignore[operator]
        except (OSError, TypeError):
            return None
        return st.st_mtime_ns, st.st_size

    def _current(self) -> Session:
        if self.directory is None:
            if self._session is None:
                self._session = Session.memory()
            return self._session
        if self._session is None or self._disk_signature() != self._signature:
            self._session = Session.load(self.directory)
            self._signature = self._disk_signature()
            self._load_stats()
        return self._session

    def save_stats(self) -> None:
        """Stats go to disk with each run (as of the previous response) and at shutdown."""
        if self.directory is None or not self.stats.requests:
            return
        try:
            _write_atomic(self.directory / STATS_FILE, orjson.dumps(asdict(self.stats)))
        except OSError as exc:
            log.warning("session %s: stats not saved: %s", self.key[:12], exc)

    def _load_stats(self) -> None:
        if self.stats.requests:
            return
        try:
            saved = SessionStats.from_dict(orjson.loads((self.directory / STATS_FILE).read_bytes()))  # type: ignore[operator]
        except (OSError, orjson.JSONDecodeError, TypeError):
            return
        for f in fields(SessionStats):
            setattr(self.stats, f.name, getattr(saved, f.name))

    # -- event loop ----------------------------------------------------------------

    def record_run(self, provider: str, body_size: int, outcome: Outcome) -> None:
        s = self.stats
        s.provider = provider
        s.requests += 1
        report = outcome.report
        if outcome.error or report is None:
            s.failures += 1
            return
        s.tokens_before += report.tokens_before
        s.tokens_after += report.tokens_after
        s.last_tier = report.tier
        s.epochs += report.mode == "epoch"
        if body_size and report.tokens_before:
            s.tokens_per_byte = report.tokens_before / body_size

    def record_usage(self, usage: Usage, estimated_sent: int) -> None:
        s = self.stats
        s.usage_reports += 1
        s.input_tokens += usage.input
        s.cache_read_tokens += usage.cache_read
        s.cache_write_tokens += usage.cache_write
        s.output_tokens += usage.output
        if estimated_sent > 0 and usage.prompt_total > 0:
            low, high = CALIBRATION_RANGE
            s.calibration = min(high, max(low, usage.prompt_total / estimated_sent))


class SessionPool:
    def __init__(self, root: Path | None, max_sessions: int, max_stats: int) -> None:
        self.root = root
        self.max_sessions = max_sessions
        self.max_stats = max(max_stats, max_sessions)
        self._live: OrderedDict[str, ProxySession] = OrderedDict()
        self._stats: OrderedDict[str, SessionStats] = OrderedDict()

    @contextlib.asynccontextmanager
    async def use(self, key: str):
        """The session's entry, held under its lock (requests of one session take turns)."""
        entry = self._entry(key)
        entry.active += 1
        try:
            async with entry.lock:
                if entry.saving is not None:
                    await entry.saving
                yield entry
        finally:
            entry.active -= 1

    def _entry(self, key: str) -> ProxySession:
        entry = self._live.get(key)
        if entry is None:
            stats = self._stats.get(key) or SessionStats()
            directory = self.root / f"proxy-{key}" if self.root is not None else None
            entry = self._live[key] = ProxySession(key, directory, stats)
        self._live.move_to_end(key)
        self._stats[key] = entry.stats
        self._stats.move_to_end(key)
        self._evict()
        return entry

    def _evict(self) -> None:
        for key in [k for k, e in self._live.items() if not e.active][: max(0, len(self._live) - self.max_sessions)]:
            del self._live[key]
        while len(self._stats) > self.max_stats:
            self._stats.popitem(last=False)

    async def flush(self) -> None:
        for entry in self._live.values():
            if entry.saving is not None:
                await entry.saving
            entry.save_stats()

    def snapshot(self) -> list[dict[str, Any]]:
        """Stats of the sessions seen, most recently used first."""
        return [s.to_dict(k) for k, s in reversed(self._stats.items())]


class DiscardingStore:
    """A CCR writer that stores nothing: for count_tokens, whose body no model ever reads."""

    @contextlib.contextmanager
    def batch(self) -> Iterator["DiscardingStore"]:
        yield self

    def put(self, text: str, hint: str | None = None) -> str:
        return make_key(text)


def compress_once(body: dict, config: CompressConfig, chain: Chain | None = None) -> bytes | None:
    """The body as a fresh session would compress it (None: unchanged). For count_tokens: the
    count reflects compression (as an epoch would render it) without disturbing the session."""
    result = run_pipeline(body, session=Session.memory(), store=DiscardingStore(), config=config, chain=chain)
    return None if result.body is body else dumps(result.body)


def _write_atomic(target: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".stats-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
