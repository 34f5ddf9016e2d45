"""The proxy's latency budget: incremental work is always waited for, only an epoch is deferred.

No assertion here depends on how fast the machine is: a run is held until the test lets it go,
and the budget is over before it does (asyncio fires the earlier timer first), so a proxy that
deferred incremental work would defer these requests every time.
"""

from __future__ import annotations

import asyncio
import threading

import httpx

from ctxmill.proxy.app import Proxy
from ctxmill.proxy.sessions import Outcome, ProxySession
from ctxmill.proxy.stats import RunSummary, SessionStats
from ctxmill.proxy.workerpool import Submitted
from ctxmill.proxy_config import ProxyConfig
from tests.helpers import eventually
from tests.proxy_fixtures import NO_EPOCHS, fake, start_proxy, upstream  # noqa: F401 - fixtures
from tests.proxy_helpers import example, prefix_sender
from tests.proxy_stages import HELD_LATER_CHAIN, held_until

BUDGET_MS = 5.0


class FakePool:
    """A worker pool whose one job the test drives: started, epoch and done when it says so."""

    def __init__(self, starts: bool = True) -> None:
        self.job: Submitted | None = None
        self.starts = starts
        self.needed: bool | None = None

    def expected_wait(self, key: str) -> float:
        return 0.0

    def submit(self, key, fn, *args, needed: bool = True, **options) -> Submitted:
        loop = asyncio.get_running_loop()
        self.job = Submitted(loop.create_future(), loop.create_future(), loop.create_future())
        self.needed = needed
        if self.starts:
            self.job.started.set_result(None)
        return self.job


def _proxy(budget_ms: float | None = BUDGET_MS, starts: bool = True) -> tuple[Proxy, FakePool]:
    proxy = Proxy(ProxyConfig(persist=False, latency_budget_ms=budget_ms))
    pool = FakePool(starts)
    proxy.workers = pool  # type: ignore[assignment]
    return proxy, pool


def _run_for(proxy: Proxy, pool: FakePool, drive, after=None) -> object:
    """within_budget for one job while `drive(job, waiting)` (a coroutine) plays the worker;
    `after(job, outcome)`, a coroutine, plays it on once the request was answered."""
    async def main():
        waiting = asyncio.ensure_future(proxy.within_budget("k" * 32, print))
        await asyncio.sleep(0)
        assert pool.job is not None
        await drive(pool.job, waiting)
        outcome = await waiting
        if after is not None:
            await after(pool.job, outcome)
        return outcome

    return asyncio.run(main())


def test_incremental_work_is_waited_for_however_long_it_takes():
    proxy, pool = _proxy()

    async def slow_incremental(job: Submitted, waiting: asyncio.Future) -> None:
        await asyncio.sleep(20 * BUDGET_MS / 1000)  # 20 budgets: the budget's timer fired long ago
        assert not waiting.done()  # still waiting for the run, not sent as it is
        job.done.set_result("compressed")
        for _ in range(3):  # the request goes as soon as its run is done: no timer to wait for
            await asyncio.sleep(0)
        assert waiting.done()

    outcome = _run_for(proxy, pool, slow_incremental)
    assert not outcome.deferred and outcome.pending is None and outcome.summary == "compressed"


def test_an_epoch_past_the_budget_is_deferred_and_finishes_in_the_background():
    proxy, pool = _proxy()

    async def slow_epoch(job: Submitted, waiting: asyncio.Future) -> None:
        await asyncio.sleep(3 * BUDGET_MS / 1000)  # incremental work first: not deferred for it
        assert not waiting.done()
        job.epoch.set_result(None)  # the run began an epoch; it never ends while the request waits

    async def finishes_later(job: Submitted, outcome) -> None:
        assert outcome.deferred and outcome.pending is job.done and outcome.summary is None
        job.done.set_result("compressed later")  # the background run fills the same outcome
        await asyncio.sleep(0)

    outcome = _run_for(proxy, pool, slow_epoch, finishes_later)
    assert outcome.deferred and outcome.summary == "compressed later"


def test_an_epoch_within_the_budget_is_sent_compressed():
    proxy, pool = _proxy(budget_ms=60_000.0)

    async def quick_epoch(job: Submitted, waiting: asyncio.Future) -> None:
        job.epoch.set_result(None)
        await asyncio.sleep(0)
        job.done.set_result("epoch")
        for _ in range(3):
            await asyncio.sleep(0)
        assert waiting.done()

    outcome = _run_for(proxy, pool, quick_epoch)
    assert not outcome.deferred and outcome.summary == "epoch"


def test_a_real_worker_holding_an_incremental_run_past_the_budget_sends_it_compressed(fake, start_proxy,
                                                                                     tmp_path):
    """End to end through a worker process: the session's second run is incremental and held
    until the test lets it go, after the budget ran out many times over; the request still waits
    for it and goes out compressed, not deferred."""
    budget_ms = 50
    proxy = start_proxy(chain=HELD_LATER_CHAIN, compress=NO_EPOCHS, latency_budget_ms=budget_ms, workers=1)
    body = example()
    release = tmp_path / "release"
    body = held_until(body, release)
    send = prefix_sender(proxy.url, body, fake)

    def session() -> dict:
        [row] = httpx.get(proxy.url + "/ctxmill/stats", timeout=120).json()["sessions"]
        return row

    send(9)  # a new session's first run, an epoch (not held; on a busy machine it may be deferred)
    eventually(lambda: session()["tokens_before"] > 0)  # it finished, in the background or not
    deferred = session()["deferred"]
    sent: list[bytes] = []
    second = threading.Thread(target=lambda: sent.append(send(11)))
    second.start()
    started = tmp_path / "release.started"
    pause = threading.Event()  # never set: a way to sleep
    for _ in range(6000):  # at most 120 s
        if started.exists() or not second.is_alive():
            break
        pause.wait(0.02)
    assert started.exists(), (sent, list(tmp_path.iterdir()))
    pause.wait(10 * budget_ms / 1000)  # the run is held past ten budgets
    release.touch()
    second.join(timeout=120)
    assert sent and b"deep_expand(" in sent[0]  # compressed, not the original bytes
    assert session()["requests"] == 2 and session()["deferred"] == deferred  # the held run was not deferred


def test_a_run_that_never_started_is_dropped_and_its_request_counts_no_failure():
    """A compression run still queued when its request left (behind other sessions' runs) is
    submitted as not needed, so the pool drops it unrun; the session is then free for its next
    request, and the dropped run counts neither a failure nor tokens."""
    proxy, pool = _proxy(starts=False)
    entry = ProxySession("k" * 32, None, SessionStats())

    async def main():
        outcome = await proxy.compress(entry, b"{}")
        assert outcome.deferred and entry.pending is pool.job.done and pool.needed is False
        pool.job.done.cancel()  # what WorkerPool does with a late job not needed
        await asyncio.sleep(0)
        return outcome

    outcome = asyncio.run(main())
    assert entry.pending is None and outcome.summary is None
    assert (entry.stats.failures, entry.stats.tokens_before) == (0, 0)


def _session_whose_last_epoch_took(run_ms: float, size: int) -> ProxySession:
    entry = ProxySession("k" * 32, None, SessionStats())
    entry.record_run(size, Outcome(RunSummary(b"{}", 100, 50, mode="epoch", run_ms=run_ms)))
    return entry


async def _epoch_begun(proxy, pool, entry, raw):
    """`proxy.compress` of `raw` started, its run reporting an epoch, and a few loop turns given to
    the proxy to act on it; returns the compress task."""
    waiting = asyncio.ensure_future(proxy.compress(entry, raw))
    await asyncio.sleep(0)
    assert pool.job is not None
    pool.job.epoch.set_result(None)
    for _ in range(5):
        await asyncio.sleep(0)
    return waiting


def test_an_epoch_the_sessions_last_one_says_will_miss_the_budget_is_deferred_without_waiting_for_it():
    """The budget is a minute, so only the estimate (the last epoch took 1,000 s) can defer the
    request before the run ends; the run goes on in the background and fills the outcome."""
    proxy, pool = _proxy(budget_ms=60_000.0)
    raw = b'{"messages": []}'
    entry = _session_whose_last_epoch_took(1_000_000.0, len(raw))
    assert entry.epoch_estimate(len(raw)) == 1_000.0

    async def main():
        waiting = await _epoch_begun(proxy, pool, entry, raw)
        assert waiting.done()  # sent as it is at once, not a budget later
        outcome = waiting.result()
        assert outcome.deferred and entry.pending is pool.job.done and outcome.summary is None
        pool.job.done.set_result(RunSummary(b"{}", 100, 50, mode="epoch", run_ms=5.0))
        await asyncio.sleep(0)
        return outcome

    outcome = asyncio.run(main())
    assert outcome.summary is not None and entry.pending is None
    assert entry.epoch_estimate(len(raw)) == 0.005  # the epoch that just ran is the new estimate


def test_an_epoch_the_sessions_last_one_says_fits_the_budget_is_waited_for():
    proxy, pool = _proxy(budget_ms=60_000.0)
    raw = b'{"messages": []}'
    entry = _session_whose_last_epoch_took(1.0, len(raw))  # 1 ms: well within two budgets

    async def main():
        waiting = await _epoch_begun(proxy, pool, entry, raw)
        assert not waiting.done()  # waiting for the run, within the budget
        pool.job.done.set_result(RunSummary(b"{}", 100, 50, mode="epoch", run_ms=1.0))
        return await waiting

    outcome = asyncio.run(main())
    assert not outcome.deferred and outcome.summary is not None


def test_a_run_its_worker_drops_while_the_request_waits_counts_as_deferred_behind_other_sessions():
    """The request waits for its run to start; the pool drops the job unrun meanwhile (its start
    deadline passed behind other sessions' runs). The original is sent, and the request counts as
    deferred because its worker was busy, not as a run that passed it through for no reason."""
    proxy, pool = _proxy(starts=False)
    entry = ProxySession("k" * 32, None, SessionStats())

    async def main():
        waiting = asyncio.ensure_future(proxy.compress(entry, b"{}"))
        await asyncio.sleep(0)
        for future in (pool.job.done, pool.job.started, pool.job.epoch):  # what WorkerPool._next does
            future.cancel()
        outcome = await waiting
        entry.record_request("anthropic", 2, outcome)
        return outcome

    outcome = asyncio.run(main())
    assert outcome.deferred and outcome.behind and outcome.data is None and entry.pending is None
    assert (entry.stats.deferred, entry.stats.deferred_behind, entry.stats.failures) == (1, 1, 0)
    assert "busy with other sessions' runs" in outcome.describe(BUDGET_MS)


def test_a_worker_too_far_behind_defers_at_once_and_says_so():
    """A worker whose queue would not start the run within the start wait: the request is sent as
    it is without waiting, counted as deferred behind other sessions; an epoch deferred past the
    budget is not counted so."""
    proxy, pool = _proxy(starts=False)
    pool.expected_wait = lambda key: 10 * proxy.start_wait  # type: ignore[method-assign]
    entry = ProxySession("k" * 32, None, SessionStats())

    async def main():
        outcome = await asyncio.wait_for(proxy.compress(entry, b"{}"), timeout=proxy.start_wait / 2)
        entry.record_request("anthropic", 2, outcome)
        pool.job.done.cancel()
        await asyncio.sleep(0)
        return outcome

    outcome = asyncio.run(main())
    assert outcome.deferred and outcome.behind and (entry.stats.deferred, entry.stats.deferred_behind) == (1, 1)
    assert "busy with other sessions' runs" in outcome.describe(BUDGET_MS)

    proxy, pool = _proxy()
    epoch = _run_for(proxy, pool, _epoch_past_the_budget)
    assert epoch.deferred and not epoch.behind
    assert "not done within" in epoch.describe(BUDGET_MS)


async def _epoch_past_the_budget(job: Submitted, waiting: asyncio.Future) -> None:
    job.epoch.set_result(None)
    await asyncio.sleep(3 * BUDGET_MS / 1000)


def test_a_warm_session_waits_behind_other_sessions_runs_where_a_cold_one_goes_as_it_is():
    """The worker's queue would start the run after 8 budgets: past the start wait (4), within a
    warm session's (20). A session whose last request went compressed waits and goes compressed
    (sent as it is, it would cost two writes of the whole prompt to the provider's cache); a new
    session, or one whose last request went as it was, goes as it is at once."""
    proxy, pool = _proxy(starts=False)
    pool.expected_wait = lambda key: 2 * proxy.start_wait  # type: ignore[method-assign]
    summary = RunSummary(b"{}", 100, 50)

    async def request(entry: ProxySession) -> Outcome:
        waiting = asyncio.ensure_future(proxy.compress(entry, b"{}"))
        await asyncio.sleep(2 * proxy.start_wait)  # the start wait is over: a cold request left
        if not waiting.done():
            pool.job.started.set_result(None)
            pool.job.done.set_result(summary)
        outcome = await waiting
        entry.record_request("anthropic", 2, outcome)
        if not pool.job.done.done():
            pool.job.done.cancel()  # dropped unrun, as WorkerPool does
        await asyncio.sleep(0)
        return outcome

    async def main():
        entry = ProxySession("k" * 32, None, SessionStats())
        first = await request(entry)  # new: not warm
        assert first.deferred and first.behind and not entry.warm
        entry.warm = True  # as after a request that went compressed
        second = await request(entry)
        assert not second.deferred and second.data == b"{}" and entry.warm
        return entry

    entry = asyncio.run(main())
    assert (entry.stats.requests, entry.stats.deferred, entry.stats.deferred_behind) == (2, 1, 1)


def test_a_session_is_warm_exactly_when_its_last_request_went_compressed():
    entry = ProxySession("k" * 32, None, SessionStats())
    compressed = Outcome(RunSummary(b"{}", 100, 50))
    for outcome, warm in [(compressed, True), (Outcome(deferred=True), False), (compressed, True),
                          (Outcome(RunSummary(b"{}", 100, 50), deferred=True), False),
                          (Outcome(error="WorkerDied: gone"), False), (compressed, True)]:
        entry.record_request("anthropic", 2, outcome)
        assert entry.warm is warm
