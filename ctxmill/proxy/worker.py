"""What runs inside a proxy worker process: the pipeline, the sessions' state and its files.

The proxy's event loop never runs the pipeline: it sends a request's bytes to the worker that
owns the session (`WorkerPool` sends a session always to the same one) and gets back the
compressed bytes and a small `RunSummary`. Must hold:
- A worker keeps the `compress.Session` of the sessions it owns in memory (bounded LRU, idle
  ones dropped; those with no place, past the proxy's allowance of new folders, never leave by
  the idle rule and are bounded apart: `MAX_MEMORY_ONLY`) and runs one request at a time, so
  a session's runs are in request order; with it its last request and compressed body
  (`ctxmill.proxy.reuse`: the same values and bytes).
  The entries of the pipeline's memos (`compress.stagekit.memo`) a session's runs used are its
  own while it is kept: when it leaves, those no other kept session used leave with it, so what
  the worker holds follows the sessions it keeps, not every session it ever ran.
- Each run holds the session's lock (its place's: the directory's file lock, the one
  `Session.open` takes, or with a shared store (`WorkerSetup.store`) the Redis lock every replica
  takes) from before it loads the state until the state is written, and reloads the state when
  another process changed it since this worker last saved it. So no process ever runs on the
  state of a session's previous request: one that wants the session while its state is still
  being written waits for the lock. With a shared store, state and originals live in Redis, so
  any replica renders the same bytes; a store failure fails the run open (`RunSummary.error`
  starts with `STORE_FAILURE`).
- The state is written right after the answer went back, before the worker reads its next job
  (`Worker.finish`), once the epoch trial the run left for then is judged
  (`compress.state.session.Session.settle`); the write overlaps the upstream's work, not the request's.
  Stats bytes sent with a run are written beside it in batches when the worker is idle
  (`ctxmill.proxy.stats.StatsBatch`), all of them at `flush`.
- Everything that decides a session's bytes is in its state, calibration included: `calibrate`
  records the provider's reported prompt tokens (as a ratio to ctxmill's estimate of what was
  sent, clamped to `CALIBRATION_RANGE`), and the next run, on whichever process or replica,
  passes `calibration × tokens_per_byte × body bytes` to the pipeline as the reported size
  (`session_state.calibrated`). The proxy calibrates before it releases the answer's last bytes, so the client's
  next request always finds it.
- Nothing raises out of `compress_request` / `count_request`: failures come back as
  `RunSummary.error` and the proxy sends the original bytes.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import signal
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from ccr.keys import make_key
from ccr.store import Retention
from ccr.stores import open_store
from compress.config import CompressConfig
from compress.runner.pipeline import Chain
from compress.runner.pipeline import run as run_pipeline
from compress.stagekit import memo
from compress.state.session import Session
from ctxmill.proxy import frames
from ctxmill.proxy.inflight import ReleasedBytes, give_back_memory
from ctxmill.proxy.session_state import SessionState
from ctxmill.proxy.stats import RunSummary, StatsBatch, session_directory
from ctxmill.proxy_config import DEFAULT_IDLE_SECONDS
from ground.jsonbytes import dumps
from ground.redis_client import StoreAddress

log = logging.getLogger("ctxmill.proxy")

MAX_MEMORY_ONLY = 16
"""Sessions a worker keeps in memory only, per worker, while it keeps the others' state at a place:
the proxy's new sessions past its hourly allowance of new session folders (`ctxmill.proxy.sessions`).
Their state lives nowhere else, so they never leave by the idle rule; beyond this many the least
recently used leaves and its next request starts over (an epoch). So a flood of made-up
conversations, or a busy hour's ended sessions, hold at most this many sessions' state (a
150K-token session's is ~2.5 MiB: bench/proxy_growth.py), not `max_sessions`'."""


@dataclass(frozen=True)
class WorkerSetup:
    """Everything a worker needs, sent once when it starts (must pickle: the chain's stage
    functions must be importable module-level functions)."""

    sessions_root: Path | None
    """Session state lives in `<sessions_root>/proxy-<key>/`; None keeps it in memory."""
    ccr_root: Path | None
    compress: CompressConfig
    chain: Chain | None
    max_sessions: int
    max_kept_bytes: int = 256 * 2**20
    """Bytes the kept sessions hold (`SessionState.size`); beyond it the least recently used leave (state stays)."""
    max_memory_only: int = MAX_MEMORY_ONLY
    """Sessions kept with no place although the worker keeps state at one (`Worker.memory_only`);
    beyond it the least recently used of them leaves."""
    log_file: Path | None = None
    """Where the proxy process logs besides stderr (`--log-file`); None: stderr only."""
    log_level: str = "info"
    ccr_retention: Retention | None = None
    """The CCR store's TTL and size cap (None: the store's defaults)."""
    store: StoreAddress | None = None
    """A shared Redis store for session state and originals (None: files and SQLite)."""
    save_delay: float = 0.0
    """Seconds a worker waits after a run's answer before writing its state (0; bench/gateway.py forces a race)."""
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    """A session with no run for this long leaves the worker's memory (`Worker.drop_idle`)."""


class Worker:
    """The sessions this worker owns (LRU, at most `max_sessions` and `max_kept_bytes`) and its
    CCR store. `finish` writes the state of the last run (the proxy's worker process calls it
    after each answer; in-process callers, after each `compress`)."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.setup = setup
        self.store = open_store(setup.ccr_root, setup.ccr_retention or Retention(), setup.store)
        self.states: OrderedDict[str, SessionState] = OrderedDict()
        self._unwritten: SessionState | None = None
        self._released = ReleasedBytes()
        self.stats = StatsBatch()

    def state(self, key: str, persist: bool = True) -> SessionState:
        state = self.states.get(key)
        if state is None:
            root = self.setup.sessions_root if persist else None
            state = self.states[key] = SessionState(key, session_directory(root, key), self.setup.store)
        self.states.move_to_end(key)
        state.used_at = time.monotonic()
        return state

    def compress(self, key: str, raw: bytes, stats: bytes | None = None, context_window: int | None = None,
                 persist: bool = True, on_epoch: Callable[[], None] | None = None) -> RunSummary:
        self.finish()
        state = self.state(key, persist)
        summary = state.compress(raw, self, stats, context_window, on_epoch)
        self._unwritten = state
        return summary

    def calibrate(self, key: str, prompt_tokens: int, sent_tokens: int, tokens_per_byte: float) -> bool:
        """`SessionState.calibrate` of a session this worker holds (False for one it does not)."""
        self.finish()
        state = self.states.get(key)
        return state is not None and state.calibrate(self, prompt_tokens, sent_tokens, tokens_per_byte)

    def finish(self) -> None:
        """Write the last run's state and release its lock; then drop the least recently used
        sessions beyond the limits (the latest always stays: `max_sessions`, `max_kept_bytes`,
        `max_memory_only`) and the idle ones (`drop_idle`)."""
        state, self._unwritten = self._unwritten, None
        if state is None:
            return
        state.finish(self)
        shed = 0
        while len(self.states) > 1 and (len(self.states) > self.setup.max_sessions
                                        or sum(s.size for s in self.states.values()) > self.setup.max_kept_bytes):
            shed += self._leave(next(iter(self.states)))
        spilled = self.memory_only()
        for key in spilled[:max(0, len(spilled) - self.setup.max_memory_only)]:  # the latest is the last
            shed += self._leave(key)
        self.drop_idle(shed + state.size)

    def memory_only(self) -> list[str]:
        """The kept sessions with no place although this worker keeps state at one (past the
        proxy's allowance of new folders), least recently used first (none when all are in memory)."""
        if self.setup.sessions_root is None:
            return []
        return [k for k, s in self.states.items() if s.place is None]

    def drop_idle(self, released: int = 0) -> None:
        """Drop the sessions kept at a place with no run for `setup.idle_seconds` from memory (their next
        run reloads the same state: the same bytes). `released`: bytes let go since (trims: `ReleasedBytes`)."""
        if self._unwritten is None:
            idle = time.monotonic() - self.setup.idle_seconds
            for key in [k for k, s in self.states.items() if s.used_at < idle and s.place is not None]:
                released += self._leave(key)
                log.debug("session %s left memory (no run for %g s)", key[:12], self.setup.idle_seconds)
        if self._released.add(released):  # a body's parse leaves freed heap pages behind
            give_back_memory()

    def _leave(self, key: str) -> int:
        """Drop a session from this worker's memory, with the memos' entries only it used
        (`compress.stagekit.memo.release`); the bytes let go."""
        return self.states.pop(key).size + memo.release(key)


class DiscardingStore:
    """A CCR writer that stores nothing: for count_tokens, whose body no model ever reads."""

    @contextlib.contextmanager
    def batch(self) -> Iterator[DiscardingStore]:
        yield self

    def put(self, text: str, hint: str | None = None) -> str:
        return make_key(text)


def compress_once(body: dict, config: CompressConfig, chain: Chain | None = None,
                  on_epoch: Callable[[], None] | None = None) -> bytes | None:
    """The body as a fresh session would compress it (None: unchanged), for count_tokens."""
    result = run_pipeline(body, session=Session.memory(), store=DiscardingStore(), config=config, chain=chain,
                          on_epoch=on_epoch)
    return None if result.body is body else dumps(result.body)


# -- entry points (called by `serve` for the proxy's WorkerPool) -------------------------
_worker: Worker | None = None
_socket: socket.socket | None = None
"""The proxy's end of the job being run: where `_epoch_notice` goes."""


def start(setup: WorkerSetup) -> None:
    """Logging like the proxy's (stderr and its log file, secrets redacted), then the worker."""
    global _worker
    from ctxmill.logs import configure_server_logging

    configure_server_logging(setup.log_level, setup.log_file)
    _worker = Worker(setup)


def serve(sock: socket.socket, setup: WorkerSetup) -> None:
    """The worker process: answer jobs from `sock` until the proxy closes it, then flush.
    Framing: `ctxmill.proxy.frames` (a run that starts an epoch says so first: `_epoch_notice`)."""
    global _socket
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the proxy, which then closes `sock`
    frames.die_with_peer(sock)
    region = frames.accept_region(sock)
    start(setup)
    _socket = sock
    with sock:
        while True:
            if _worker is not None and _worker.stats.due(lambda seconds: not frames.arrives_within(sock, seconds)):
                _worker.stats.write()
            elif _worker is not None and not frames.arrives_within(sock, setup.idle_seconds / 10):
                _worker.drop_idle()  # a worker with no job for a while lets its idle sessions go
            elif not _answer(sock, region):
                break
    flush()


def _answer(sock: socket.socket, region: frames.Region | None = None) -> bool:
    """Run the next job from `sock` (or `region`) and answer the same way; False when the proxy
    hung up. The job's frame dies with this call: a waiting worker holds none of it."""
    job = frames.receive(sock, region)
    if job is None:
        return False
    with job:  # read out (unpickled) before the answer takes the region
        fn, args = pickle.loads(job)
    del job
    try:
        answer = pickle.dumps((True, fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - the proxy fails this job open
        answer = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
    sock.sendall(b"".join(frames.pack(answer, region)))  # one send: one wake-up of the proxy
    del answer
    if _worker is not None:
        _worker.finish()  # the state is written before the next job is read
    return True


def _epoch_notice() -> None:
    """Tell the proxy the job's run has begun an epoch (its latency budget counts from now)."""
    if _socket is not None:
        _socket.sendall(frames.EPOCH)


def compress_request(key: str, raw: bytes, stats: bytes | None, context_window: int | None = None,
                     persist: bool = True) -> RunSummary:
    """`persist` False: the session's state stays in memory (see ctxmill.proxy.sessions)."""
    assert _worker is not None
    return _worker.compress(key, raw, stats, context_window, persist, _epoch_notice)


def calibrate_request(key: str, prompt_tokens: int, sent_tokens: int, tokens_per_byte: float) -> bool:
    """The provider's usage of the session's last request, into its state (`Worker.calibrate`)."""
    assert _worker is not None
    return _worker.calibrate(key, prompt_tokens, sent_tokens, tokens_per_byte)


def count_request(raw: bytes) -> RunSummary:
    assert _worker is not None
    try:
        return RunSummary(compress_once(orjson.loads(raw), _worker.setup.compress, _worker.setup.chain, _epoch_notice))
    except Exception as exc:  # noqa: BLE001 - fail open
        log.warning("count_tokens: compression failed, original sent: %s", type(exc).__name__)
        return RunSummary(None, error=type(exc).__name__)


def flush() -> None:
    """Write every session's state and close the CCR store; the worker takes no job after it."""
    global _worker
    if _worker is not None:
        _worker.finish()
        _worker.stats.write()
        _worker.store.close()
        _worker = None
