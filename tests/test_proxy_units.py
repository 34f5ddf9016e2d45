"""Proxy pieces without HTTP: usage reading, header rules, session keys, calibration, CLI checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.formats.usage import Usage
from ctxmill.proxy.identity import request_key, session_key
from ctxmill.proxy.usage_tap import UsageTap
from ctxmill.proxy.wire import downstream_headers, upstream_headers
from tests.fake_upstream import anthropic_events, openai_chunks, openai_completion
from tests.strategies import anthropic_requests, openai_requests, responses_requests

ROOT = Path(__file__).resolve().parents[1]
REPLY = {"role": "assistant", "content": [{"type": "thinking", "thinking": "t" * 50, "signature": "s"},
                                          {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"c": "ls"}}]}


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    points = sorted({p % (len(data) + 1) for p in points})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0), max_size=40), st.integers(min_value=1, max_value=10**6))
def test_sse_usage_does_not_depend_on_how_the_stream_is_chunked(points, prompt):
    """Anthropic: input/cache from message_start, output from message_delta, for any chunking."""
    data = b"".join(e for e, _ in anthropic_events(REPLY, 1, prompt))
    tap = UsageTap("anthropic", event_stream=True)
    for chunk in _cuts(data, points):
        tap.feed(chunk)
    assert tap.finish() == Usage(input=prompt // 2, cache_read=prompt - prompt // 2, cache_write=0, output=40)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0), max_size=20), st.integers(min_value=1, max_value=10**6), st.booleans())
def test_openai_usage_from_final_chunk_or_json(points, prompt, include_usage):
    message = {"role": "assistant", "content": "hi"}
    stream = b"".join(e for e, _ in openai_chunks(message, 1, prompt, include_usage))
    tap = UsageTap("openai", event_stream=True)
    for chunk in _cuts(stream, points):
        tap.feed(chunk)
    expected = Usage(input=prompt - prompt // 2, cache_read=prompt // 2, output=40) if include_usage else None
    assert tap.finish() == expected
    import orjson

    tap = UsageTap("openai", event_stream=False)
    for chunk in _cuts(orjson.dumps(openai_completion(message, 1, prompt)), points):
        tap.feed(chunk)
    assert tap.finish() == Usage(input=prompt - prompt // 2, cache_read=prompt // 2, output=40)


def test_hop_by_hop_and_connection_named_headers_are_dropped():
    pairs = [("Host", "h"), ("Connection", "keep-alive, X-Private"), ("X-Private", "1"), ("TE", "trailers"),
             ("Content-Length", "5"), ("x-api-key", "k"), ("accept-encoding", "gzip"), ("x-dup", "1"), ("x-dup", "2")]
    out = upstream_headers(pairs, identity_encoding=True)
    assert out == [("x-api-key", "k"), ("x-dup", "1"), ("x-dup", "2"), ("accept-encoding", "identity")]
    assert ("accept-encoding", "gzip") in upstream_headers(pairs, identity_encoding=False)
    raw = [(b"transfer-encoding", b"chunked"), (b"set-cookie", b"a"), (b"set-cookie", b"b"), (b"keep-alive", b"5")]
    assert downstream_headers(raw) == [(b"set-cookie", b"a"), (b"set-cookie", b"b")]


def test_session_key_is_stable_across_turns_and_separates_conversations():
    first = {"role": "user", "content": "fix the bug"}
    turn1 = {"system": "sys", "metadata": {"user_id": "u1"}, "messages": [first]}
    turn2 = {**turn1, "messages": [first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]}
    key = session_key("anthropic", turn1)
    assert key == session_key("anthropic", turn2) and len(key) == 32
    assert key != session_key("anthropic", {**turn1, "metadata": {"user_id": "u2"}})
    assert key != session_key("anthropic", {**turn1, "system": "other"})
    assert key != session_key("anthropic", {**turn1, "messages": [{"role": "user", "content": "title this"}]})
    assert key != session_key("openai", turn1)
    chat = {"messages": [{"role": "system", "content": "s"}, first], "user": "u1"}
    assert session_key("openai", chat) != session_key("openai", {**chat, "user": "u2"})


def test_calibration_is_session_state_that_a_fresh_worker_reads(tmp_path):
    from ccr.store import CCRStore
    from compress.config import CompressConfig
    from compress.state.session import Session
    from ctxmill.proxy.session_state import calibrated
    from ctxmill.proxy.worker import Worker, WorkerSetup
    from tests.proxy_helpers import example

    setup = WorkerSetup(tmp_path / "sessions", None, CompressConfig(), None, max_sessions=4)
    first = Worker(setup)
    first.store.close()
    first.store = CCRStore.in_memory()
    raw = orjson.dumps(example())
    assert first.compress("k" * 32, raw).error == ""
    first.calibrate("k" * 32, prompt_tokens=1200, sent_tokens=1000, tokens_per_byte=0.25)
    first.calibrate("k" * 32, prompt_tokens=10**9, sent_tokens=1, tokens_per_byte=0.25)  # clamped
    saved = Session.load(tmp_path / "sessions" / f"proxy-{'k' * 32}")
    assert (saved.header.calibration, saved.header.tokens_per_byte) == (4.0, 0.25)
    assert calibrated(saved, 40_000) == 40_000  # 4.0 * 0.25 * 40,000: what the next run passes as reported
    assert calibrated(Session.memory(), 40_000) is None  # no usage yet: the pipeline estimates



def test_memory_is_handed_back_once_the_bodies_let_go_add_up(tmp_path, monkeypatch):
    """Each request's parse leaves freed heap pages behind, so a process hands them back once
    the bodies it let go of since the last time add up (`TRIM_AFTER_BYTES`), whatever their size:
    a worker's run lets go of what its session kept (`SessionState.size`: request and output)."""
    from ccr.store import CCRStore
    from compress.config import CompressConfig
    from ctxmill.proxy import inflight, worker
    from tests.proxy_helpers import example

    released = inflight.ReleasedBytes()
    third = inflight.TRIM_AFTER_BYTES // 3 + 1
    assert [released.add(third) for _ in range(6)] == [False, False, True, False, False, True]
    raw = orjson.dumps(example())
    trims: list[int] = []
    monkeypatch.setattr(worker, "give_back_memory", lambda: trims.append(1))

    def after_runs(folder: Path, runs: int) -> worker.Worker:
        w = worker.Worker(worker.WorkerSetup(folder, None, CompressConfig(), None, max_sessions=4))
        w.store.close()
        w.store = CCRStore.in_memory()
        for _ in range(runs):
            assert w.compress("k" * 32, raw).error == ""
            w.finish()
        return w

    kept = after_runs(tmp_path / "one", 1).states["k" * 32].size
    assert kept > len(raw)  # the compressed body kept counts too
    monkeypatch.setattr(inflight, "TRIM_AFTER_BYTES", 3 * kept)
    trims.clear()
    after_runs(tmp_path / "six", 6)
    assert len(trims) == 2

def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], capture_output=True, text=True, env=env, timeout=60)


def test_cli_refuses_remote_host_and_self_loop():
    r = _cli("proxy", "--host", "0.0.0.0")
    assert r.returncode == 2 and "--allow-remote" in r.stderr and len(r.stderr.splitlines()) == 1
    r = _cli("proxy", "--port", "9999", "--upstream-anthropic", "http://127.0.0.1:9999")
    assert r.returncode == 2 and "points at the proxy itself" in r.stderr


def test_cli_stats_queries_a_running_proxy():
    from ctxmill.proxy import create_app
    from ctxmill.proxy_config import ProxyConfig
    from tests.fake_upstream import ServerThread

    with ServerThread(create_app(ProxyConfig(persist=False))) as proxy:
        r = _cli("proxy", "--stats", "--port", str(proxy.port))
        assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("session") and "total" in r.stdout
    r = _cli("proxy", "--stats", "--port", str(proxy.port))
    assert r.returncode == 2 and "no ctxmill proxy answering" in r.stderr


def _users_config(tmp_path, monkeypatch):
    """The user's own config.toml, where [proxy] is set (a project's is refused: provenance)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "ctxmill").mkdir(parents=True)
    return tmp_path / "xdg" / "ctxmill" / "config.toml"


def test_proxy_settings_from_the_config_file_and_flags(tmp_path, monkeypatch):
    from ctxmill.config_tables import parse_budget
    from ctxmill.errors import ConfigError
    from ctxmill.settings import Settings

    config = _users_config(tmp_path, monkeypatch)
    assert Settings.load(tmp_path).proxy_overrides == {}
    config.write_text('[proxy]\nlatency_budget_ms = 40\nworkers = 3\n')
    assert Settings.load(tmp_path).proxy_overrides == {"latency_budget_ms": 40.0, "workers": 3}
    config.write_text('[proxy]\nlatency_budget_ms = "none"\n')
    assert Settings.load(tmp_path).proxy_overrides == {"latency_budget_ms": None}
    config.write_text('[proxy]\nnew_sessions_per_hour = 5000\n')
    assert Settings.load(tmp_path).proxy_overrides == {"new_sessions_per_hour": 5000}
    for bad in ('latency_budget_ms = 0', 'latency_budget_ms = "soon"', 'workers = 0', 'port = 1',
                'new_sessions_per_hour = -1', 'new_sessions_per_hour = 1.5'):
        config.write_text(f"[proxy]\n{bad}\n")
        with pytest.raises(ConfigError, match=r"proxy\."):
            Settings.load(tmp_path).proxy_overrides
    config.write_text("")
    assert parse_budget("12.5") == 12.5 and parse_budget("none") is None
    r = _cli("proxy", "--latency-budget-ms", "-1")
    assert r.returncode == 2 and "--latency-budget-ms" in r.stderr


def test_client_limits_from_the_config_file_and_flags(tmp_path, monkeypatch):
    from ctxmill.errors import ConfigError
    from ctxmill.settings import Settings

    config = _users_config(tmp_path, monkeypatch)
    config.write_text("[proxy]\nmax_inflight_mb = 100\nmax_connections = 50\nclient_timeout = 7\n")
    assert Settings.load(tmp_path).proxy_overrides == {"max_inflight_bytes": 100 * 2**20, "max_connections": 50,
                                                       "client_timeout": 7.0}
    for bad in ("max_inflight_mb = 0", "max_connections = 0", "client_timeout = -1", 'client_timeout = "1"'):
        config.write_text(f"[proxy]\n{bad}\n")
        with pytest.raises(ConfigError, match=r"proxy\."):
            Settings.load(tmp_path).proxy_overrides
    config.write_text("")
    r = _cli("proxy", "--max-inflight-mb", "10", "--max-body-mb", "20")
    assert r.returncode == 2 and "raise --max-inflight-mb" in r.stderr and len(r.stderr.splitlines()) == 1
    for flag in ("--max-inflight-mb", "--max-connections"):
        r = _cli("proxy", flag, "0")
        assert r.returncode == 2 and flag in r.stderr


def test_worker_pool_runs_waiting_requests_first_and_drops_unneeded_late_jobs():
    import asyncio

    from compress.config import CompressConfig
    from ctxmill.proxy.worker import WorkerSetup
    from ctxmill.proxy.workerpool import WorkerPool
    from tests.proxy_stages import stamp

    async def scenario():
        pool = WorkerPool(WorkerSetup(None, None, CompressConfig(), None, max_sessions=4), 1)
        pool.start()
        blocker = pool.submit("a", stamp, "blocker", 0.5).done
        late = pool.submit("b", stamp, "late but needed", 0.0, wait=0.05).done
        dropped = pool.submit("c", stamp, "late count_tokens", 0.0, wait=0.05, needed=False).done
        waiting = pool.submit("d", stamp, "still waited for", 0.0, wait=None).done
        done = [await blocker, await waiting, await late]
        await asyncio.sleep(0)
        await pool.close()
        return done, dropped

    (blocker, waiting, late), dropped = asyncio.run(scenario())
    assert blocker[1] < waiting[1] < late[1]  # the job whose request waits jumped the late one
    assert dropped.cancelled()


def test_the_pool_knows_how_long_a_new_job_of_a_session_would_wait():
    """What the adaptive budget reads: an idle worker means no wait; a worker with jobs ahead
    means their number times how long its jobs take."""
    import asyncio

    from compress.config import CompressConfig
    from ctxmill.proxy.worker import WorkerSetup
    from ctxmill.proxy.workerpool import WorkerPool
    from tests.proxy_stages import stamp

    async def scenario():
        pool = WorkerPool(WorkerSetup(None, None, CompressConfig(), None, max_sessions=4), 1)
        pool.start()
        idle = pool.expected_wait("a")
        await pool.submit("a", stamp, "first", 0.2).done
        running = [pool.submit("a", stamp, f"queued {n}", 0.2).done for n in range(3)]
        behind = pool.expected_wait("a")
        await asyncio.gather(*running)
        await pool.close()
        return idle, behind

    idle, behind = asyncio.run(scenario())
    assert idle == 0 and behind >= 3 * 0.2 * 0.9  # three jobs ahead of ~0.2 s each


def test_an_epoch_is_announced_and_left_out_of_how_long_jobs_take():
    """A job that began an epoch sets its `epoch` future before its result, and does not count in
    the worker's usual job time (what the budget's queue check reads); an incremental one does."""
    import asyncio

    from compress.config import CompressConfig
    from ctxmill.proxy.worker import WorkerSetup
    from ctxmill.proxy.workerpool import WorkerPool
    from tests.proxy_stages import epoch_stamp, stamp

    async def scenario():
        pool = WorkerPool(WorkerSetup(None, None, CompressConfig(), None, max_sessions=4), 1)
        pool.start()
        epoch = pool.submit("a", epoch_stamp, "epoch")
        assert await epoch.done == "epoch" and epoch.epoch.done()
        after_epoch = pool._slots[0].seconds
        plain = pool.submit("a", stamp, "incremental", 0.0)
        await plain.done
        after_plain = pool._slots[0].seconds
        await pool.close()
        return after_epoch, after_plain, plain.epoch.done()

    after_epoch, after_plain, announced = asyncio.run(scenario())
    assert after_epoch == 0.0 and after_plain > 0 and not announced


def test_a_run_holds_its_sessions_lock_until_its_state_is_written(tmp_path):
    """Another process that wants the session (a replica, the CLI) waits until the state of the
    request before is written: it can never run on the state before that."""
    from filelock import Timeout

    from compress.config import CompressConfig
    from compress.state.session import Session
    from compress.state.session_store import LOCK_FILE
    from ctxmill.proxy.worker import Worker, WorkerSetup
    from ground.files import private_lock
    from tests.proxy_helpers import example

    worker = Worker(WorkerSetup(tmp_path, None, CompressConfig(), None, max_sessions=4))
    state = worker.state("k")
    assert not worker.compress("k", orjson.dumps(example())).error  # answered; its state not written yet
    with pytest.raises(Timeout):
        private_lock(state.directory / LOCK_FILE, timeout=0).acquire()
    worker.finish()
    with Session.open(state.directory) as theirs:
        assert theirs.records  # what the run decided, there for the next process
    worker.store.close()


def test_a_chain_that_cannot_reach_the_workers_is_refused_up_front():
    from compress.config import CompressConfig
    from compress.runner.pipeline import Chain
    from compress.stagekit.stage import Stage
    from compress.tiers import Tier
    from ctxmill.proxy.worker import WorkerSetup
    from ctxmill.proxy.workerpool import WorkerPool

    chain = Chain().push(Stage("inline", lambda messages, ctx: messages, Tier.ALWAYS))
    with pytest.raises(ValueError, match="module-level"):
        WorkerPool(WorkerSetup(None, None, CompressConfig(), chain, max_sessions=4), 1)


@settings(max_examples=150, deadline=None)
@given(st.one_of(anthropic_requests(), anthropic_requests(wild=True), openai_requests()), st.sampled_from(["anthropic", "openai"]),
       st.sampled_from([{}, {"metadata": {"user_id": "u1"}}, {"user": "u2"}, {"prompt_cache_key": "k"}]))
def test_request_key_reads_the_same_key_from_the_raw_bytes(body, provider, ids):
    body = {**body, **ids}
    assert request_key(provider, orjson.dumps(body)) == session_key(provider, body)


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.tuples(st.just("openai"), openai_requests()),
                 st.tuples(st.just("openai-responses"), responses_requests(wild=True))),
       st.data())
def test_a_system_message_later_in_the_conversation_keeps_the_session(shaped, data):
    provider, body = shaped
    field = "input" if provider == "openai-responses" else "messages"
    messages = body[field]
    first_user = next(i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user")
    at = data.draw(st.integers(first_user + 1, len(messages)))
    later = {"role": data.draw(st.sampled_from(["system", "developer"])), "content": data.draw(st.text(max_size=40))}
    grown = {**body, field: [*messages[:at], later, *messages[at:]]}
    key = session_key(provider, body)
    assert key is not None
    assert session_key(provider, grown) == key == request_key(provider, orjson.dumps(grown))
    earlier = {**body, field: [later, *messages]}
    assert session_key(provider, earlier) == request_key(provider, orjson.dumps(earlier)) != key


def test_request_key_is_none_for_what_is_not_a_request():
    for raw in (b"", b"not json", b"[1, 2]", b'{"model": "x"}', b'{"messages": {"role": "user"}}', b'{"messages": [1,'):
        assert request_key("anthropic", raw) is None


def test_stats_batch_waits_for_an_idle_worker_within_its_delay(tmp_path):
    """Stats are written once per batch (the latest per folder), when the worker is idle or
    long overdue under a load that never lets it idle, and `write` leaves none behind."""
    from ctxmill.proxy.stats import STATS_DELAY, STATS_FILE, StatsBatch

    now = [0.0]
    batch = StatsBatch(clock=lambda: now[0])
    busy = lambda seconds: False  # noqa: E731 - a job always arrives first
    idle = lambda seconds: True  # noqa: E731
    assert not batch.due(idle)  # nothing kept
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
    for n in range(1, 4):
        for folder in folders:
            batch.keep(folder, orjson.dumps({"requests": n}))
    asked: list[float] = []
    assert batch.due(lambda seconds: asked.append(seconds) or True) and asked == [STATS_DELAY]
    assert not batch.due(busy)
    now[0] = 1.5 * STATS_DELAY
    assert not batch.due(busy)  # due, but a job is waiting: the job first
    now[0] = 2.5 * STATS_DELAY
    assert batch.due(busy)  # long overdue: written even so
    assert not any((f / STATS_FILE).exists() for f in folders)
    batch.write()
    assert [orjson.loads((f / STATS_FILE).read_bytes()) for f in folders] == [{"requests": 3}] * 2
    assert not batch.due(idle)


def test_worker_writes_stats_in_batches_and_all_at_flush(tmp_path):
    """A worker keeps the stats runs bring and writes each folder's latest once per batch;
    its flush (a clean shutdown) writes every one still waiting."""
    from ccr.store import CCRStore
    from compress.config import CompressConfig
    from ctxmill.proxy import worker
    from ctxmill.proxy.stats import STATS_FILE
    from tests.proxy_helpers import example

    setup = worker.WorkerSetup(tmp_path / "sessions", None, CompressConfig(), None, max_sessions=4)
    worker.start(setup)
    w = worker._worker
    assert w is not None
    w.store.close()
    w.store = CCRStore.in_memory()
    raw = orjson.dumps(example())
    for n in (1, 2):
        for key in ("a" * 32, "b" * 32):
            assert worker.compress_request(key, raw, orjson.dumps({"requests": n})).error == ""
            w.finish()
    folders = sorted((tmp_path / "sessions").iterdir())
    assert len(folders) == 2 and not any((f / STATS_FILE).exists() for f in folders)
    worker.flush()
    assert [orjson.loads((f / STATS_FILE).read_bytes()) for f in folders] == [{"requests": 2}] * 2


def test_idle_sessions_leave_worker_memory_and_reload_the_same_bytes(tmp_path):
    """A persisted session with no run for the setup's idle_seconds is dropped from its worker's memory (a
    memory-only one is not: its state lives nowhere else); its next run renders the same bytes
    as a worker that kept it."""
    import time

    from ccr.store import CCRStore
    from compress.config import CompressConfig
    from ctxmill.proxy import worker
    from tests.proxy_helpers import example
    from tests.proxy_stages import CHAIN

    body = example()
    requests = [orjson.dumps({**body, "messages": body["messages"][:n]}) for n in (3, 5, 7)]
    sent: dict[str, list] = {}
    for name, idle in (("kept", 3600.0), ("dropped", 0.05)):
        w = worker.Worker(worker.WorkerSetup(tmp_path / name, None, CompressConfig(), CHAIN, max_sessions=8,
                                             idle_seconds=idle))
        w.store.close()
        w.store = CCRStore.in_memory()
        for raw in requests:
            for key, persist in (("a" * 32, True), ("m" * 32, False)):
                sent.setdefault(name, []).append(w.compress(key, raw, persist=persist).data)
                w.finish()
            time.sleep(0.1)
            w.compress("b" * 32, requests[0])
            w.finish()
            assert ("a" * 32 in w.states) is (name == "kept")
            assert "m" * 32 in w.states
        w.store.close()
    assert sent["kept"] == sent["dropped"]
