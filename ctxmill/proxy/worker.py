"""What runs inside a proxy worker process: the pipeline, the sessions' state and its files.

The proxy's event loop never runs the pipeline: it sends a request's bytes to the worker that
owns the session (`WorkerPool` sends a session always to the same one) and gets back the
compressed bytes and a small `RunSummary`. Must hold:
- A worker keeps the `compress.Session` of the sessions it owns in memory (bounded LRU) and runs
  one request at a time; a session's runs are therefore in request order.
- Each run holds the session's lock (its place's: the directory's file lock, the one
  `Session.open` takes, or with a shared store (`WorkerSetup.store`) the Redis lock every replica
  takes) and reloads the state when another process changed it since this worker last saved it.
  With a shared store, state and originals live in Redis, so any replica renders the same bytes;
  a store failure fails the run open (`RunSummary.error` starts with `STORE_FAILURE`).
- State is written by one saver thread after the result went back, after it judged the epoch
  trial the run left for then (`compress.session.Session.settle`); the session's next run, an eviction
  and `flush` wait for that write. Stats bytes sent with a run are written beside it.
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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import orjson

from ccr.base import CCRError
from ccr.keys import make_key
from ccr.store import Retention
from ccr.stores import open_store
from compress.config import CompressConfig
from compress.pipeline import Chain
from compress.pipeline import run as run_pipeline
from compress.session import Session
from compress.session_store import StateBusy
from ctxmill.proxy.identity import working_directory
from ctxmill.proxy.inflight import TRIM_AFTER_BYTES, give_back_memory
from ctxmill.proxy.stats import STORE_FAILURE, RunSummary, session_directory, write_stats
from ctxmill.shared_store import session_place
from ground.jsonbytes import dumps
from ground.redis_client import StoreAddress

log = logging.getLogger("ctxmill.proxy")


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
    """Request bytes the sessions kept in memory may add up to (each counts its last request);
    beyond it the least recently used are dropped from memory (their state stays on disk)."""
    log_file: Path | None = None
    """Where the proxy process logs (`ctxmill.logs.configure_logging`); None: stderr."""
    ccr_retention: Retention | None = None
    """The CCR store's TTL and size cap (None: the store's defaults)."""
    store: StoreAddress | None = None
    """A shared Redis store for session state and originals (None: files and SQLite)."""


class SessionState:
    """One session's `compress.Session`, kept in this worker's memory between runs and in step
    with its directory through `compress.session` (its file lock and `changed_on_disk`)."""

    def __init__(self, key: str, directory: Path | None, store: StoreAddress | None = None) -> None:
        self.key = key
        self.directory = directory
        """Where the stats are written (and the state, without a shared store)."""
        self.place = (session_place(store, directory, f"proxy-{key}")  # type: ignore[arg-type]
                      if store is not None or directory is not None else None)
        self.saving: Future | None = None
        self.size = 0
        """The byte size of the session's last request (what its state keeps in memory, roughly)."""
        self._session: Session | None = None

    def compress(self, raw: bytes, calibrated_tokens: int | None, worker: "Worker",
                 context_window: int | None = None) -> RunSummary:
        try:
            body = orjson.loads(raw)
            with self._locked():
                result = run_pipeline(body, session=self._current(), store=worker.store,
                                      config=worker.setup.compress, chain=worker.setup.chain,
                                      reported_input_tokens=calibrated_tokens, context_window=context_window,
                                      now=time.time())
            report = result.report
            data = None if result.body is body or report.error else dumps(result.body)
        except Exception as exc:  # noqa: BLE001 - fail open: the original body is sent
            store = STORE_FAILURE if _store_failure(exc) else ""
            if store:
                self._session = None  # reloaded from the store once it answers again
            log.warning("session %s: %scompression failed, original sent: %s: %s",
                        self.key[:12], store, type(exc).__name__, exc)
            return RunSummary(None, error=f"{store}{type(exc).__name__}: {exc}"[:500])
        model = body.get("model") if isinstance(body, dict) else None
        return RunSummary(data, report.tokens_before, report.tokens_after, report.tier, report.mode,
                          report.summary_line(), report.error, model if isinstance(model, str) else "",
                          dict(report.stages_saved), working_directory(raw))

    def persist(self, stats: bytes | None) -> None:
        """Judge the epoch trial the run left for after its answer (`Session.settle`; saving
        does it first), then write the state `compress` left in memory. If another process rewrote the state file
        since this worker loaded it, theirs wins: ours is dropped and reloaded on the next run."""
        if self._session is not None and self.place is None:
            self._session.settle()
        if self.place is not None and self._session is not None:
            try:
                with self._locked():
                    if self._session.changed_on_disk():
                        self._session = None
                        log.warning("session %s: state changed by another process; reloading", self.key[:12])
                    else:
                        self._session.save()
            except Exception as exc:  # noqa: BLE001 - fail open: the next run starts an epoch
                self._session = None
                log.warning("session %s: state not saved: %s: %s", self.key[:12], type(exc).__name__, exc)
        if stats is not None and self.directory is not None:
            write_stats(self.directory, stats)

    def wait_saved(self) -> None:
        if self.saving is not None:
            self.saving.result()
            self.saving = None

    def _locked(self) -> contextlib.AbstractContextManager:
        return self.place.lock() if self.place is not None else contextlib.nullcontext()

    def _current(self) -> Session:
        if self._session is None or self._session.changed_on_disk():
            self._session = Session.load(self.place) if self.place is not None else Session.memory()
        return self._session


def _store_failure(exc: BaseException) -> bool:
    """Whether `exc` says the shared store failed (unreachable, busy), not the pipeline."""
    return isinstance(exc, (CCRError, StateBusy)) or type(exc).__module__.split(".")[0] == "redis"


class Worker:
    """The sessions this worker owns (LRU, at most `max_sessions` and `max_kept_bytes`), its CCR
    store and saver."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.setup = setup
        self.store = open_store(setup.ccr_root, setup.ccr_retention or Retention(), setup.store)
        self.saver = ThreadPoolExecutor(1, thread_name_prefix="ctxmill-save")
        self.states: OrderedDict[str, SessionState] = OrderedDict()

    def state(self, key: str, persist: bool = True) -> SessionState:
        state = self.states.get(key)
        if state is None:
            root = self.setup.sessions_root if persist else None
            state = self.states[key] = SessionState(key, session_directory(root, key), self.setup.store)
        self.states.move_to_end(key)
        return state

    def compress(self, key: str, raw: bytes, calibrated_tokens: int | None, stats: bytes | None,
                 context_window: int | None = None, persist: bool = True) -> RunSummary:
        state = self.state(key, persist)
        state.wait_saved()
        summary = state.compress(raw, calibrated_tokens, self, context_window)
        state.size = len(raw)
        state.saving = self.saver.submit(state.persist, stats)
        if state.size >= TRIM_AFTER_BYTES:  # a large body's parse leaves freed heap pages behind
            state.saving.add_done_callback(lambda _: give_back_memory())
        self._shed()
        return summary

    def _shed(self) -> None:
        """Drop the least recently used sessions beyond the limits (the latest always stays)."""
        shed = 0
        while len(self.states) > 1 and (len(self.states) > self.setup.max_sessions
                                        or sum(s.size for s in self.states.values()) > self.setup.max_kept_bytes):
            state = self.states.popitem(last=False)[1]
            state.wait_saved()
            shed += state.size
        if shed >= TRIM_AFTER_BYTES:
            give_back_memory()

    def flush(self) -> None:
        for state in self.states.values():
            state.wait_saved()


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


# -- entry points (called by `serve` for the proxy's WorkerPool) -------------------------

_worker: Worker | None = None


def start(setup: WorkerSetup) -> None:
    """Logging like the proxy's (secrets redacted), then the worker."""
    global _worker
    from ctxmill.logs import configure_logging, redact_every_record

    redact_every_record()
    if setup.log_file is not None:
        configure_logging(setup.log_file)
    _worker = Worker(setup)


def serve(sock: socket.socket, setup: WorkerSetup) -> None:
    """The worker process: answer jobs from `sock` until the proxy closes it, then flush.
    A job is an 8-byte big-endian length and a pickle of (function, args); the answer is the
    same framing around (True, result) or (False, exception)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the proxy, which then closes `sock`
    start(setup)
    with sock:
        while _answer(sock):
            pass
    flush()


def _answer(sock: socket.socket) -> bool:
    """Run the next job from `sock` and send its answer; False when the proxy hung up. The job's
    bytes die with this call: a worker waiting for its next job holds none of the last one."""
    job = _receive(sock)
    if job is None:
        return False
    fn, args = pickle.loads(job)
    del job
    try:
        answer = pickle.dumps((True, fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - the proxy fails this job open
        answer = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
    sock.sendall(len(answer).to_bytes(8, "big"))
    sock.sendall(answer)
    return True


def _receive(sock: socket.socket) -> bytearray | None:
    header = _exactly(sock, 8)
    return None if header is None else _exactly(sock, int.from_bytes(header, "big"))


def _exactly(sock: socket.socket, size: int) -> bytearray | None:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            return None
        got += n
    return data


def compress_request(key: str, raw: bytes, calibrated_tokens: int | None, stats: bytes | None,
                     context_window: int | None = None, persist: bool = True) -> RunSummary:
    """`persist` False: the session's state stays in memory (see ctxmill.proxy.sessions)."""
    assert _worker is not None
    return _worker.compress(key, raw, calibrated_tokens, stats, context_window, persist)


def count_request(raw: bytes) -> RunSummary:
    assert _worker is not None
    try:
        return RunSummary(compress_once(orjson.loads(raw), _worker.setup.compress, _worker.setup.chain))
    except Exception as exc:  # noqa: BLE001 - fail open
        log.warning("count_tokens: compression failed, original sent: %s", type(exc).__name__)
        return RunSummary(None, error=type(exc).__name__)


def flush() -> None:
    """Write every session's state and close the CCR store; the worker takes no job after it."""
    global _worker
    if _worker is not None:
        _worker.flush()
        _worker.store.close()
        _worker = None
