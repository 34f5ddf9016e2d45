"""The idle rule: a session with no run for the proxy's `idle_seconds` leaves its worker's memory,
and its next run reloads its state from its place, so it renders the same bytes as a worker that
kept it (in process on a simulated clock, and through real worker processes)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.state.session import Session
from ctxmill.paths import sessions_dir
from ctxmill.proxy import worker
from ctxmill.proxy_config import ProxyConfig
from tests.helpers import eventually
from tests.proxy_fixtures import SMALL, fake, start_proxy, upstream  # noqa: F401 - fixtures
from tests.proxy_helpers import example

IDLE = 30.0
KEYS = [f"{n:032x}" for n in range(1, 4)]


def _request(session: int, messages: int) -> bytes:
    """Session `session`'s conversation (its own first message) cut after `messages` messages."""
    body = example()
    first = {**body["messages"][0], "content": f"({session}) {body['messages'][0]['content']}"}
    return orjson.dumps({**body, "messages": [first, *body["messages"][1:messages]]})


def _worker(root: Path, idle: float) -> worker.Worker:
    return worker.Worker(worker.WorkerSetup(root / "sessions", root / "ccr", SMALL, None, max_sessions=8,
                                            idle_seconds=idle))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(KEYS) - 1), st.sampled_from([0.0, IDLE / 2, 2 * IDLE])),
                min_size=2, max_size=8))
def test_sessions_leave_after_the_idle_time_and_come_back_with_the_same_bytes(steps):
    """Each step: the clock moves on by its pause, then its session sends its next request. After
    a run, the worker holds exactly the sessions that ran within the idle time, and every request
    renders the bytes of a worker whose sessions never leave."""
    clock = [0.0]
    fake_time = SimpleNamespace(**{**vars(time), "monotonic": lambda: clock[0]})
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(worker, "time", fake_time):
        dropping, keeping = _worker(Path(folder) / "dropping", IDLE), _worker(Path(folder) / "keeping", 1e9)
        sent = [0] * len(KEYS)
        last_run: dict[str, float] = {}
        try:
            for session, pause in steps:
                clock[0] += pause
                sent[session] += 1
                raw = _request(session, 1 + 2 * sent[session])
                got = []
                for w in (dropping, keeping):
                    got.append(w.compress(KEYS[session], raw).data)
                    w.finish()
                assert got[0] == got[1]
                last_run[KEYS[session]] = clock[0]
                assert set(dropping.states) == {k for k, at in last_run.items() if at >= clock[0] - IDLE}
                assert set(keeping.states) == set(last_run)
        finally:
            dropping.store.close()
            keeping.store.close()


def test_a_memory_only_session_never_leaves_by_the_idle_rule(tmp_path):
    """Its state lives nowhere else, so dropping it would lose what decides its bytes."""
    clock = [0.0]
    fake_time = SimpleNamespace(**{**vars(time), "monotonic": lambda: clock[0]})
    with mock.patch.object(worker, "time", fake_time):
        w = _worker(tmp_path, IDLE)
        try:
            w.compress(KEYS[0], _request(0, 3), persist=False)
            w.finish()
            clock[0] += 2 * IDLE
            w.compress(KEYS[1], _request(1, 3))
            w.finish()
            assert set(w.states) == {KEYS[0], KEYS[1]}
        finally:
            w.store.close()


def test_memory_only_sessions_beyond_their_bound_leave_least_recently_used_first(tmp_path):
    """Persisted sessions do not count; the one that left starts over: its next request gets the
    bytes of a worker that never saw it."""
    keys = [f"{n:032x}" for n in range(10, 16)]
    w = worker.Worker(worker.WorkerSetup(tmp_path / "sessions", tmp_path / "ccr", SMALL, None, max_sessions=8,
                                         max_memory_only=2))
    fresh = _worker(tmp_path / "fresh", IDLE)

    def run(w: worker.Worker, n: int, messages: int, persist: bool = False) -> bytes | None:
        data = w.compress(keys[n], _request(n, messages), persist=persist).data
        w.finish()
        return data

    try:
        for n, persist in ((0, False), (1, False), (2, True), (3, False)):
            run(w, n, 3, persist)
        assert list(w.states) == [keys[1], keys[2], keys[3]] and w.memory_only() == [keys[1], keys[3]]
        run(w, 1, 5)
        run(w, 4, 3)
        assert list(w.states) == [keys[2], keys[1], keys[4]]
        assert run(w, 0, 5) == run(fresh, 0, 5)
        assert list(w.states) == [keys[2], keys[4], keys[0]]
    finally:
        w.store.close()
        fresh.store.close()


def test_idle_time_must_be_positive():
    with pytest.raises(ValueError, match="idle time"):
        ProxyConfig(idle_seconds=0)


def _session_keys(proxy) -> list[str]:
    return [s["session"] for s in httpx.get(proxy.url + "/ctxmill/stats", timeout=120).json()["sessions"]]


def test_a_real_worker_lets_an_idle_session_go_and_reloads_the_same_bytes(fake, start_proxy, tmp_path):
    """Through the proxy and its worker process: session A, idle past the proxy's idle time while
    B runs, leaves the worker's memory (its log says so) and its next request is sent upstream
    with the bytes of a proxy that kept it."""
    upstream_bodies: dict[str, list[bytes]] = {}
    logs = {}
    for name, idle in (("kept", 3600.0), ("dropped", 0.5)):
        logs[name] = tmp_path / f"{name}.log"
        proxy = start_proxy(home=tmp_path / name, idle_seconds=idle, workers=1, log_file=logs[name],
                            log_level="debug")
        bodies = upstream_bodies.setdefault(name, [])

        def send(session: int, messages: int) -> None:
            r = httpx.post(proxy.url + "/v1/messages", content=_request(session, messages), timeout=120)  # noqa: B023
            assert r.status_code == 200
            bodies.append(bytes(fake.received[-1].body))  # noqa: B023

        send(0, 3)
        [key_a] = _session_keys(proxy)
        folder = sessions_dir(tmp_path / name) / f"proxy-{key_a}"
        eventually(lambda: Session.load(folder).header.calibration is not None)  # noqa: B023 - A's state written
        time.sleep(1.0)  # past the dropping proxy's idle time
        send(1, 3)  # the worker's next job: A has had no run for longer than the idle time
        eventually(lambda: len(_session_keys(proxy)) == 2)  # noqa: B023
        send(0, 5)
        send(0, 7)
        left = f"session {key_a[:12]} left memory"
        if name == "dropped":
            eventually(lambda left=left: left in logs["dropped"].read_text())
        else:
            assert left not in logs[name].read_text()
    assert upstream_bodies["kept"] == upstream_bodies["dropped"]
