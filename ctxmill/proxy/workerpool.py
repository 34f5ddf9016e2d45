"""The proxy's worker processes, seen from the event loop: session affinity and replacement.

`WorkerPool(setup, n)` keeps n single-process `ProcessPoolExecutor`s; a session key always maps
to the same one (`slot`), so the worker that ran a session's last request still has its state in
memory. Workers start from a forkserver that preloaded the engine (the proxy process has threads,
so it is never forked itself; a new worker costs a fork, not an interpreter start). Must hold:
- `submit` returns an asyncio future and never blocks the event loop.
- A worker that died (its future raises `BrokenProcessPool`) is replaced on the next submit; the
  requests it had fail, and the proxy sends their original bytes.
- `close` lets every worker write its sessions' state, then stops them.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

from ctxmill.proxy import worker
from ctxmill.proxy.worker import WorkerSetup

log = logging.getLogger("ctxmill.proxy")

PRELOAD = ["ctxmill.proxy.worker", "compress.pipeline", "ccr.store"]


def _context() -> multiprocessing.context.BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # no effect once the forkserver runs (it already has them)
    return ctx


class WorkerPool:
    def __init__(self, setup: WorkerSetup, count: int) -> None:
        if count < 1:
            raise ValueError("the proxy needs at least one worker process")
        self.setup = setup
        self._executors: list[ProcessPoolExecutor | None] = [None] * count

    def slot(self, key: str) -> int:
        return int(key[:8], 16) % len(self._executors) if key else 0

    def _executor(self, slot: int) -> ProcessPoolExecutor:
        executor = self._executors[slot]
        if executor is None:
            executor = self._executors[slot] = ProcessPoolExecutor(
                1, mp_context=_context(), initializer=worker.start, initargs=(self.setup,))
        return executor

    def start(self) -> None:
        """Start every worker now (not on the first request), without waiting for them."""
        for slot in range(len(self._executors)):
            self._executor(slot).submit(worker.ready)

    def submit(self, key: str, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        slot = self.slot(key)
        try:
            future = self._executor(slot).submit(fn, *args)
        except BrokenProcessPool:
            self.replace(slot)
            future = self._executor(slot).submit(fn, *args)
        return asyncio.wrap_future(future)

    def replace(self, slot: int) -> None:
        """Drop a broken worker; the next submit starts a new one."""
        executor = self._executors[slot]
        if executor is not None:
            log.warning("proxy worker %d died; replacing it", slot)
            executor.shutdown(wait=False, cancel_futures=True)
            self._executors[slot] = None

    async def close(self) -> None:
        flushes = [asyncio.wrap_future(e.submit(worker.flush)) for e in self._executors if e is not None]
        for done in await asyncio.gather(*flushes, return_exceptions=True):
            if isinstance(done, BaseException):
                log.warning("a proxy worker did not flush its state: %s", type(done).__name__)
        for executor in self._executors:
            if executor is not None:
                await asyncio.to_thread(executor.shutdown)
        self._executors = [None] * len(self._executors)
