"""The proxy's worker processes, seen from the event loop: session affinity and scheduling.

`WorkerPool(setup, n)` keeps n worker processes; a session key always maps to the same one
(`slot`), so the worker that ran a session's last request still has its state in memory. Workers
start from a forkserver that preloaded the engine (the proxy process has threads, so it is never
forked itself; a new worker costs a fork, not an interpreter start). Each is connected by a Unix
socket pair the event loop reads and writes itself (`worker.serve` on the other end): a job is one
length-prefixed pickle of (function, args) and its answer one pickle of (ok, value), so a 0.7 MB
request crosses with no helper thread and no GIL hand-over (`ctxmill.proxy.frames`); where the
system allows it, a frame's bytes go through a memory region the two processes share and only
its header crosses the socket. Must hold:
- `submit` returns a `Submitted` (asyncio futures: `started` when the job went to its worker,
  `epoch` when its run began an epoch, `done` with its result) and never blocks the event loop.
- A worker gets one job at a time. `first` jobs (a session's usage, which the client's answer
  waits for) go before all others; of the rest, the one whose request is still waiting with the
  earliest deadline goes first; jobs past their deadline (their request already left with the
  original bytes) run only when no request is waiting, and a job not `needed` after its deadline
  (count_tokens) is dropped then. A session has at most one run waiting (the app sees to that),
  so reordering never reorders one session's runs.
- A worker that died (its socket closed mid-job) fails that job, so the proxy sends that
  request's original bytes, and is replaced by the next dispatch.
- `close` lets the queued jobs finish and every worker write its sessions' state, then stops them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import multiprocessing
import pickle
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxmill.proxy import frames, worker
from ctxmill.proxy.worker import WorkerSetup

log = logging.getLogger("ctxmill.proxy")

PRELOAD = ["ctxmill.proxy.worker", "compress.runner.pipeline", "ccr.store"]
MOVING = 0.2
"""Weight of the latest job in a worker's moving average of job time."""
CLOSE_TIMEOUT = 30.0
"""Seconds `close` waits for queued jobs before stopping the workers anyway."""
IO_LIMIT = 2**24
"""The event loop's read buffer per worker socket; answers are read whole with `readexactly`."""


def _context() -> multiprocessing.context.ForkServerContext:
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
    started: asyncio.Future
    epoch: asyncio.Future
    first: bool = False


@dataclass(frozen=True)
class Submitted:
    started: asyncio.Future
    """Done (None) when the job was sent to its worker."""
    epoch: asyncio.Future
    """Done (None) when the job's run began an epoch (never, for incremental work)."""
    done: asyncio.Future
    """The job's result (or exception; cancelled when it was dropped unrun)."""


class WorkerDied(RuntimeError):
    """The worker process ended while it held a job."""


class _Process:
    """One worker process and the event loop's end of its socket."""

    def __init__(self, setup: WorkerSetup) -> None:
        ours, theirs = socket.socketpair()
        self.process = _context().Process(target=worker.serve, args=(theirs, setup), daemon=True,
                                          name="ctxmill-proxy-worker")
        self.process.start()
        theirs.close()
        self._region = frames.offer_region(ours)
        self._socket = ours
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def call(self, fn: Callable[..., Any], args: tuple, on_epoch: Callable[[], None] = lambda: None) -> Any:
        """The job's result; `on_epoch` is called when its run says it began an epoch."""
        if self._streams is None:
            self._streams = await asyncio.open_unix_connection(sock=self._socket, limit=IO_LIMIT)
        reader, writer = self._streams
        head, rest = frames.pack(pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL), self._region)
        try:
            writer.write(head)
            if rest:
                writer.write(rest)
            del rest
            await writer.drain()
            while not (size := int.from_bytes(await reader.readexactly(frames.HEADER), "big")):
                on_epoch()  # a notice (frames.EPOCH); the answer follows
            ok, value = self._answer(size, await reader.readexactly(size) if not size & frames.SHARED else b"")
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            raise WorkerDied(f"proxy worker exited ({type(exc).__name__})") from None
        if not ok:
            raise value
        return value

    def _answer(self, size: int, data: bytes) -> tuple[bool, Any]:
        """The answer's (ok, value): from the region when its header says `SHARED`, else `data`."""
        if not size & frames.SHARED:
            return pickle.loads(data)
        if self._region is None:
            raise ConnectionError("the worker answered in a shared region it was never offered")
        with self._region.view(size & ~frames.SHARED) as view:
            return pickle.loads(view)

    def hang_up(self) -> None:
        """Close our end (on the event loop): the worker flushes and exits when it reads EOF."""
        if self._streams is not None:
            self._streams[1].close()
        else:
            self._socket.close()

    def abandon(self) -> None:
        """Hang up and kill the process now (a worker that died or broke the protocol)."""
        self.hang_up()
        if self.process.is_alive():
            self.process.kill()

    def wait(self, timeout: float) -> None:
        """Wait for the process to exit (blocks: call it off the event loop); kill it after
        `timeout` seconds."""
        self.process.join(timeout=timeout)
        if self.process.is_alive():
            self.process.kill()


@dataclass
class _Slot:
    process: _Process | None = None
    busy: bool = False
    queue: list[_Job] = field(default_factory=list)
    seconds: float = 0.0
    """How long this worker's jobs take, as a moving average (0 until one finished), epochs left
    out: they are the exception (10-30 times a job's usual time), and a request must not be sent
    as it is because another session's epoch ran a moment ago."""


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
        self._tasks: set[asyncio.Task] = set()

    def slot(self, key: str) -> int:
        return int(key[:8], 16) % len(self._slots) if key else 0

    def _process(self, slot: _Slot) -> _Process:
        if slot.process is None:
            slot.process = _Process(self.setup)
        return slot.process

    def start(self) -> None:
        """Start every worker now (not on the first request), without waiting for them."""
        for slot in self._slots:
            self._process(slot)

    def submit(self, key: str, fn: Callable[..., Any], *args: Any, wait: float | None = None,
               needed: bool = True, first: bool = False) -> Submitted:
        """Queue `fn(*args)` for the session's worker; `wait`: seconds its request waits for the
        job to start (None: as long as it takes)."""
        loop = asyncio.get_running_loop()
        deadline = math.inf if wait is None else loop.time() + wait
        job = _Job(fn, args, deadline, needed, next(self._seq), loop.create_future(), loop.create_future(),
                   loop.create_future(), first)
        slot = self._slots[self.slot(key)]
        slot.queue.append(job)
        self._dispatch(slot)
        return Submitted(job.started, job.epoch, job.future)

    def _dispatch(self, slot: _Slot) -> None:
        if not slot.busy and (job := self._next(slot)) is not None:
            slot.busy = True
            task = asyncio.ensure_future(self._run(slot, job))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, slot: _Slot, job: _Job) -> None:
        if not job.started.done():
            job.started.set_result(None)
        began = asyncio.get_running_loop().time()
        try:
            result = await self._process(slot).call(job.fn, job.args, lambda: _set(job.epoch))
        except WorkerDied as exc:
            self._replace(slot)
            _fail(job, exc)
        except Exception as exc:  # noqa: BLE001 - the job fails, the request fails open
            _fail(job, exc)
        else:
            if not job.future.done():
                job.future.set_result(result)
        finally:
            took = asyncio.get_running_loop().time() - began
            if not job.epoch.done():
                slot.seconds = took if not slot.seconds else slot.seconds + MOVING * (took - slot.seconds)
            slot.busy = False
            self._dispatch(slot)

    def expected_wait(self, key: str) -> float:
        """Seconds until a job submitted now for `key` would start, from the jobs ahead of it and
        how long this worker's jobs take (0 for an idle worker)."""
        slot = self._slots[self.slot(key)]
        return (slot.busy + len(slot.queue)) * slot.seconds

    def _next(self, slot: _Slot) -> _Job | None:
        """The waiting job with the earliest deadline still ahead; else the oldest needed one."""
        now = asyncio.get_running_loop().time()
        for job in [j for j in slot.queue if j.deadline <= now and not j.needed]:
            slot.queue.remove(job)
            for future in (job.future, job.started, job.epoch):
                future.cancel()
        if not slot.queue:
            return None
        if first := [j for j in slot.queue if j.first]:
            slot.queue.remove(first[0])
            return first[0]
        waiting = [j for j in slot.queue if j.deadline > now]
        job = min(waiting, key=lambda j: (j.deadline, j.seq)) if waiting else min(slot.queue, key=lambda j: j.seq)
        slot.queue.remove(job)
        return job

    def _replace(self, slot: _Slot) -> None:
        """Drop a dead worker; the next dispatch starts a new one."""
        if slot.process is not None:
            log.warning("proxy worker %d died; replacing it", self._slots.index(slot))
            slot.process.abandon()
            slot.process = None

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + CLOSE_TIMEOUT
        while any(s.busy or s.queue for s in self._slots) and loop.time() < give_up:  # noqa: ASYNC110 - bounded drain
            await asyncio.sleep(0.01)
        idle = [s.process for s in self._slots if s.process is not None and not s.busy]
        flushes = await asyncio.gather(*(p.call(worker.flush, ()) for p in idle), return_exceptions=True)
        for done in flushes:
            if isinstance(done, BaseException):
                log.warning("a proxy worker did not flush its state: %s", type(done).__name__)
        processes = [s.process for s in self._slots if s.process is not None]
        for process in processes:
            process.hang_up()
        for process in processes:
            await asyncio.to_thread(process.wait, CLOSE_TIMEOUT)
        self._slots = [_Slot() for _ in self._slots]


def _set(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def _fail(job: _Job, exc: BaseException) -> None:
    if not job.future.done():
        job.future.set_exception(exc)
