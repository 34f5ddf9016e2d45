"""One session's state in a proxy worker: its `compress.Session`, kept in memory between runs and
in step with its place (files or the shared store), with its last request and compressed body.

Must hold (see `ctxmill.proxy.worker`, which keeps these per session): a run holds the place's lock
from before it loads the state until the state is written (`finish`); the same input and state
give the same bytes as a whole parse and a fresh load would; failures come back as
`RunSummary.error`, never raised, and the original body is sent.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ccr.base import CCRError
from compress.config import CompressConfig
from compress.runner.pipeline import Chain
from compress.runner.pipeline import run as run_pipeline
from compress.stagekit import memo
from compress.state.session import Session
from compress.state.session_store import StateBusy, StateChanged
from ctxmill.proxy import reuse
from ctxmill.proxy.stats import STORE_FAILURE, RunSummary, StatsBatch, calibration_of
from ctxmill.shared_store import session_place
from ground.redis_client import StoreAddress

log = logging.getLogger("ctxmill.proxy")


class RunSetup(Protocol):
    """What a run reads of its worker's setup (`ctxmill.proxy.worker.WorkerSetup`)."""

    @property
    def compress(self) -> CompressConfig: ...
    @property
    def chain(self) -> Chain | None: ...
    @property
    def save_delay(self) -> float: ...


class Worker(Protocol):
    """What a session's runs use of the worker that keeps it (`ctxmill.proxy.worker.Worker`)."""

    store: Any
    """The worker's CCR store (`ccr.stores.open_store`), handed to the pipeline."""
    stats: StatsBatch
    @property
    def setup(self) -> RunSetup: ...


class SessionState:
    """One session's `compress.Session`, kept in this worker's memory between runs and in step
    with its place (files or the shared store) through `compress.state.session`.

    A run takes the place's lock and keeps it until its state is written (`finish`, which the
    worker calls right after the answer went back, before its next job): another process that
    wants the session waits on the lock, so it never reads the state of the request before."""

    def __init__(self, key: str, directory: Path | None, store: StoreAddress | None = None) -> None:
        self.key = key
        self.directory = directory
        """Where the stats are written (and the state, without a shared store)."""
        self.place = (session_place(store, directory, f"proxy-{key}")  # type: ignore[arg-type]
                      if store is not None or directory is not None else None)
        self.size = 0  # bytes kept between runs: its last request's and the compressed body kept (`reuse.Kept`)
        self.used_at = time.monotonic()
        self._session: Session | None = None
        self._held: contextlib.ExitStack | None = None
        """The place's lock, from a run's start until its state is written."""
        self._stats: bytes | None = None
        self._last_request: reuse.Kept | None = None  # the next run parses only what was appended
        self._last_output: reuse.Kept | None = None  # and serialises only what was rendered anew

    def compress(self, raw: bytes, worker: Worker, stats: bytes | None = None,
                 context_window: int | None = None, on_epoch: Callable[[], None] | None = None) -> RunSummary:
        self.finish(worker)
        began = time.perf_counter()
        self.size = len(raw)  # its parsed messages stay in the session's records, whatever comes of the run
        try:
            body, self._last_request = reuse.parse(raw, self._last_request)
            self._hold()
            session = self._current()
            with memo.used_by(self.key):  # the memos' entries it uses go when the session leaves (`Worker._leave`)
                result = run_pipeline(body, session=session, store=worker.store, config=worker.setup.compress,
                                      chain=worker.setup.chain, reported_input_tokens=calibrated(session, len(raw)),
                                      context_window=context_window, now=time.time(), on_epoch=on_epoch)
            report = result.report
            data, self._last_output = ((None, self._last_output) if result.body is body or report.error
                                       else reuse.serialise(result.body, self._last_output))
        except Exception as exc:  # noqa: BLE001 - fail open: the original body is sent
            self._release()
            self._last_request = self._last_output = None
            store = STORE_FAILURE if _store_failure(exc) else ""
            if store:
                self._session = None  # reloaded from the store once it answers again
            log.warning("session %s: %scompression failed, original sent: %s: %s",
                        self.key[:12], store, type(exc).__name__, exc)
            return RunSummary(None, error=f"{store}{type(exc).__name__}: {exc}"[:500], rejected=self._rejected())
        self._stats = stats
        self.size += len(self._last_output.spans.data) if self._last_output is not None else 0
        model = body.get("model") if isinstance(body, dict) else None
        return RunSummary(data, report.tokens_before, report.tokens_after, report.tier, report.mode,
                          report.summary_line(), report.error, model if isinstance(model, str) else "",
                          dict(report.stages_saved), rejected=self._rejected(),
                          run_ms=(time.perf_counter() - began) * 1000)

    def finish(self, worker: Worker) -> None:
        """Judge the epoch trial the last run left for after its answer (`Session.settle`; saving
        does it first), write the state it left in memory, then let the lock go (nothing to do
        when no run is unwritten). If the lock's lease ran out during the run and another process
        wrote the state meanwhile, theirs wins: ours is dropped and reloaded on the next run."""
        if self._held is None:
            return
        try:
            if worker.setup.save_delay:
                time.sleep(worker.setup.save_delay)  # the forced race of bench/gateway.py
            with memo.used_by(self.key):  # the epoch trial's stages use the memos too
                if self._session is not None and self.place is None:
                    self._session.settle()
                if self.place is not None and self._session is not None:
                    if self._session.changed_on_disk():
                        raise StateChanged("written by another process during the run")
                    self._session.save()  # raises StateChanged when another process wrote meanwhile
        except StateChanged:  # the lease ran out mid-run and another process wrote: theirs wins
            self._session = None
            log.warning("session %s: state changed by another process; reloading", self.key[:12])
        except Exception as exc:  # noqa: BLE001 - fail open: the next run starts an epoch
            self._session = None
            log.warning("session %s: state not saved: %s: %s", self.key[:12], type(exc).__name__, exc)
        finally:
            self._release()
        if self._stats is not None and self.directory is not None:
            worker.stats.keep(self.directory, self._stats)
        self._stats = None

    def calibrate(self, worker: Worker, prompt_tokens: int, sent_tokens: int, tokens_per_byte: float) -> bool:
        """Record the provider's count of the request last sent (`prompt_tokens` for ctxmill's
        estimate `sent_tokens`) as the session's calibration (`calibration_of`), under the lock,
        when it changed. True when the state at its place holds it now."""
        self.finish(worker)
        if (wanted := calibration_of(prompt_tokens, sent_tokens, tokens_per_byte)) is None:
            return False
        try:
            with self._locked():
                session = self._current()
                if (session.header.calibration, session.header.tokens_per_byte) != wanted:
                    session.set_calibration(*wanted)
                    session.save()
            return self.place is not None
        except Exception as exc:  # noqa: BLE001 - fail open: the tier comes from ctxmill's estimate
            self._session = None
            log.warning("session %s: calibration not saved: %s: %s", self.key[:12], type(exc).__name__, exc)
            return False

    def _hold(self) -> None:
        held = contextlib.ExitStack()
        held.enter_context(self._locked())
        self._held = held

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.close()

    def _locked(self) -> contextlib.AbstractContextManager:
        return self.place.lock() if self.place is not None else contextlib.nullcontext()

    def _current(self) -> Session:
        if self._session is None or self._session.changed_on_disk():  # reads only what others appended, if it can
            self._session = Session.load(self.place, self._session) if self.place is not None else Session.memory()
            self._session.hashing.trust_identity = True  # its bodies are parsed here, never changed in place
        return self._session

    def _rejected(self) -> int:
        """Records of the shared store that failed their integrity check at the last load."""
        return getattr(self.place, "take_rejected", lambda: 0)()


def calibrated(session: Session, body_size: int) -> int | None:
    """The request's size as the provider counts it, from the session's calibration (None: none yet)."""
    c, per_byte = session.header.calibration, session.header.tokens_per_byte
    return None if c is None or per_byte is None else round(c * per_byte * body_size)


def _store_failure(exc: BaseException) -> bool:
    """Whether `exc` says the shared store failed (unreachable, busy)."""
    return isinstance(exc, (CCRError, StateBusy)) or type(exc).__module__.split(".")[0] == "redis"
