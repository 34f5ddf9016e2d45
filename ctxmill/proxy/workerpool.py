"""The proxy's worker processes, seen from the event loop: session affinity and scheduling.

`WorkerPool(setup, n)` keeps n single-process `ProcessPoolExecutor`s; a session key always maps
to the same one (`slot`), so the worker that ran a session's last request still has its state in
memory. Workers start from a forkserver that preloaded the engine (the proxy process has threads,
so it is never forked itself; a new worker costs a fork, not an interpreter start). Must hold:
- `submit` returns an asyncio future and never blocks the event loop.
- A worker gets one job at a time. Of the jobs waiting for it, the one whose request is still
  waiting with the earliest deadline goes first; jobs past their deadline (their request already
  left with the original bytes) run only when no request is waiting, and a job not `needed`
  after its deadline (count_tokens) is dropped then. A session has at most one job waiting
  (the app sees to that), so reordering never reorders one session's runs.
- A worker that died (`BrokenProcessPool`) is replaced on the next dispatch; its job fails and
  the proxy sends that request's original bytes.
- `close` lets the queued jobs finish and every worker write its sessions' state, then stops them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Callable

from ctxmill.proxy import worker
from ctxmill.proxy.worker import WorkerSetup

log = logging.getLogger("ctxmill.proxy")

PRELOAD = ["ctxmill.proxy.worker", "compress.pipeline", "ccr.store"]
CLOSE_TIMEOUT = 30.0
"""Seconds `close` waits for queued jobs before stopping the workers anyway."""


def _context() -> multiprocessing.context.BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # no effect once the forkserver runs (it already has them)
    return ctx


@dataclass
class _Job:
    fn: Callable[..., Any]
    args: tuple
    deadline: float
    needed: bool
    """Run it even when its request left (a compression run: its state serves the next request)."""
    seq: int
    future: asyncio.Future


@dataclass
class _Slot:
    executor: ProcessPoolExecutor | None = None
    busy: bool = False
    queue: list[_Job] = field(default_factory=list)


class WorkerPool:
    def __init__(self, setup: WorkerSetup, count: int) -> None:
        if count < 1:
            raise ValueError("the proxy needs at least one worker process")
        try:
            pickle.dumps(setup)
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise ValueError(f"the proxy's chain cannot go to its workers (stage functions must be "
                             f"module-level functions): {exc}") from None
        self.setup = setup
        self._slots = [_Slot() for _ in range(count)]
        self._seq = itertools.count()

    def slot(self, key: str) -> int:
        return int(key[:8], 16) % len(self._slots) if key else 0

    def _executor(self, slot: _Slot) -> ProcessPoolExecutor:
        if slot.executor is None:
            slot.executor = ProcessPoolExecutor(1, mp_context=_context(), initializer=worker.start,
                                                initargs=(self.setup,))
        return slot.executor

    def start(self) -> None:
        """Start every worker now (not on the first request), without waiting for them."""
        for slot in self._slots:
            self._executor(slot).submit(worker.ready)

    def submit(self, key: str, fn: Callable[..., Any], *args: Any, budget: float | None = None,
               needed: bool = True) -> asyncio.Future:
        """Queue `fn(*args)` for the session's worker; `budget`: seconds its request waits."""
        loop = asyncio.get_running_loop()
        deadline = math.inf if budget is None else loop.time() + budget
        job = _Job(fn, args, deadline, needed, next(self._seq), loop.create_future())
        slot = self._slots[self.slot(key)]
        slot.queue.append(job)
        self._dispatch(slot)
        return job.future

    def _dispatch(self, slot: _Slot) -> None:
        while not slot.busy and (job := self._next(slot)) is not None:
            try:
                try:
                    done = self._executor(slot).submit(job.fn, *job.args)
                except BrokenProcessPool:
                    self._replace(slot)
                    done = self._executor(slot).submit(job.fn, *job.args)
            except Exception as exc:  # noqa: BLE001 - the job fails, the request fails open
                if not job.future.done():
                    job.future.set_exception(exc)
                continue
            slot.busy = True
            asyncio.wrap_future(done).add_done_callback(lambda f, job=job: self._finished(slot, job, f))

    def _next(self, slot: _Slot) -> _Job | None:
        """The waiting job with the earliest deadline still ahead; else the oldest needed one."""
        now = asyncio.get_running_loop().time()
        for job in [j for j in slot.queue if j.deadline <= now and not j.needed]:
            slot.queue.remove(job)
            job.future.cancel()
        if not slot.queue:
            return None
        waiting = [j for j in slot.queue if j.deadline > now]
        job = min(waiting, key=lambda j: (j.deadline, j.seq)) if waiting else min(slot.queue, key=lambda j: j.seq)
        slot.queue.remove(job)
        return job

    def _finished(self, slot: _Slot, job: _Job, done: asyncio.Future) -> None:
        slot.busy = False
        if not job.future.done():
            if done.cancelled():
                job.future.cancel()
            elif done.exception() is not None:
                job.future.set_exception(done.exception())  # type: ignore[arg-type]
            else:
                job.future.set_result(done.result())
        self._dispatch(slot)

    def _replace(self, slot: _Slot) -> None:
        """Drop a broken worker; the next dispatch starts a new one."""
        if slot.executor is not None:
            log.warning("proxy worker %d died; replacing it", self._slots.index(slot))
            slot.executor.shutdown(wait=False, cancel_futures=True)
            slot.executor = None

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + CLOSE_TIMEOUT
        while any(s.busy or s.queue for s in self._slots) and loop.time() < give_up:
            await asyncio.sleep(0.01)
        live = [s.executor for s in self._slots if s.executor is not None]
        flushes = [asyncio.wrap_future(e.submit(worker.flush)) for e in live]
        for done in await asyncio.gather(*flushes, return_exceptions=True):
            if isinstance(done, BaseException):
                log.warning("a proxy worker did not flush its state: %s", type(done).__name__)
        for executor in live:
            await asyncio.to_thread(executor.shutdown)
        self._slots = [_Slot() for _ in self._slots]
