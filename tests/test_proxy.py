"""The proxy over real HTTP on 127.0.0.1: official SDK clients -> proxy -> fake upstream."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace

import httpx
import orjson
import pytest

from compress.tiers import TierThresholds
from ctxmill.proxy import create_app
from ctxmill.proxy_config import ProxyConfig
from tests.fake_upstream import FakeUpstream, ServerThread
from tests.helpers import eventually
from tests.proxy_fixtures import NO_EPOCHS, SMALL, fake, proxy, start_proxy, upstream  # noqa: F401 - fixtures
from tests.proxy_helpers import (
    SECRET,
    anthropic_client,
    example,
    openai_client,
    paired,
    prefix_sender,
    replay,
    to_openai,
    tool_ids,
)
from tests.proxy_stages import CRASH, CRASH_CHAIN, HELD_CHAIN, held_until

TIMEOUT = 120  # seconds; a liveness bound on a busy machine (a proxy's first request waits for its worker)


def stats(proxy: ServerThread) -> dict:
    return httpx.get(proxy.url + "/ctxmill/stats", timeout=TIMEOUT).json()


def _check_transparent(fake: FakeUpstream, client_bodies: list[bytearray]) -> None:
    assert len(client_bodies) == len(fake.sent)
    for got, sent in zip(client_bodies, fake.sent):
        assert bytes(got) == bytes(sent)


def _check_compressed_and_paired(fake: FakeUpstream, client_sent: list[dict], epochs: int) -> None:
    upstream = [r.json() for r in fake.received]
    assert len(upstream) == len(client_sent)
    for up, mine in zip(upstream, client_sent):
        assert len(up["messages"]) == len(mine["messages"])
        assert tool_ids(up) == tool_ids(mine) and paired(tool_ids(up))
    assert sum(len(orjson.dumps(u["messages"])) for u in upstream) < sum(len(orjson.dumps(b["messages"])) for b in client_sent)
    assert b"deep_expand(" in fake.received[-1].body  # strip_injections left CCR markers
    # cache-stable: between epochs each request extends the previous one
    breaks = sum(after["messages"][:len(before["messages"])] != before["messages"]
                 for before, after in zip(upstream, upstream[1:]))
    assert 1 < epochs < len(upstream) and breaks <= epochs - 1


def test_anthropic_sdk_conversation_streaming_and_not(fake, proxy):
    body = example()
    client, received = anthropic_client(proxy.url)
    sent: list[dict] = []

    def send(history: list[dict], reply: dict) -> dict:
        fake.replies.append(reply)
        kwargs = dict(model=body["model"], max_tokens=1024, system=body["system"], messages=list(history),
                      metadata={"user_id": "user_abc_session_1"})
        sent.append({"messages": list(history)})
        if len(sent) % 2:
            message = client.messages.create(**kwargs)
        else:
            with client.messages.stream(**kwargs) as stream:
                message = stream.get_final_message()
        assert [b.type for b in message.content] == [b["type"] for b in reply["content"]]
        return {"role": "assistant", "content": [b.model_dump(exclude_none=True, include={"type", "text", "thinking",
                                                 "signature", "id", "name", "input"}) for b in message.content]}

    history = replay(body["messages"], lambda m: m["role"] == "assistant", send)
    assert tool_ids({"messages": history}) == tool_ids(body)  # ids survived the round trips
    _check_transparent(fake, received)
    [session] = stats(proxy)["sessions"]
    _check_compressed_and_paired(fake, sent, session["epochs"])
    assert session["requests"] == session["usage_reports"] == len(sent)
    assert session["saved"] > 0 and session["cache_read_tokens"] > 0 and session["failures"] == 0


def test_openai_sdk_conversation_streaming_and_not(fake, proxy):
    ex = example()
    messages = to_openai(ex["system"], ex["messages"])
    client, received = openai_client(proxy.url)
    sent: list[dict] = []

    def send(history: list[dict], reply: dict) -> dict:
        fake.replies.append(reply)
        sent.append({"messages": list(history)})
        if len(sent) % 2:
            message = client.chat.completions.create(model="gpt-x", messages=history).choices[0].message
            out = message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"})
        else:
            stream = client.chat.completions.create(model="gpt-x", messages=history, stream=True,
                                                    stream_options={"include_usage": True})
            chunks = list(stream)
            assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0
            calls = {}
            for c in chunks:
                for d in (c.choices[0].delta.tool_calls or []) if c.choices else []:
                    call = calls.setdefault(d.index, {"id": d.id, "type": "function",
                                                      "function": {"name": d.function.name, "arguments": ""}})
                    call["function"]["arguments"] += d.function.arguments or ""
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            out = {"role": "assistant", "content": text or None, **({"tool_calls": list(calls.values())} if calls else {})}
        assert [c["id"] for c in out.get("tool_calls", [])] == [c["id"] for c in reply.get("tool_calls", [])]
        return out

    replay(messages, lambda m: m["role"] == "assistant", send)
    _check_transparent(fake, received)
    [session] = stats(proxy)["sessions"]
    _check_compressed_and_paired(fake, sent, session["epochs"])
    assert session["provider"] == "openai" and session["usage_reports"] == len(sent)
    assert session["cache_read_tokens"] > 0 and session["cache_write_tokens"] == 0


def test_usage_calibrates_the_next_request_from_the_sessions_state(fake, start_proxy, tmp_path):
    """calibration = reported prompt tokens / estimated sent tokens (fake reports len(body)//4),
    written into the session's state before the answer ends, where any process finds it."""
    from compress.state.session import Session
    from ctxmill.paths import sessions_dir

    proxy = start_proxy(home=tmp_path / ".ctxmill")
    body = example()
    client, _ = anthropic_client(proxy.url)
    client.messages.create(model=body["model"], max_tokens=10, system=body["system"], messages=body["messages"][:5])
    [session] = stats(proxy)["sessions"]
    reported = len(fake.received[-1].body) // 4
    folder = sessions_dir(tmp_path / ".ctxmill") / f"proxy-{session['session']}"
    eventually(lambda: Session.load(folder).header.calibration is not None)  # one process: written behind the answer
    state = Session.load(folder)
    assert state.header.calibration == pytest.approx(reported / session["tokens_after"], abs=0.01)
    assert state.header.tokens_per_byte > 0


def test_an_unchanged_calibration_is_not_sent_to_the_worker_again(fake, upstream, tmp_path):
    """One process owns a persisted session's state: a usage report that leaves its calibration
    as the state holds it costs no worker job, and the requests' bytes stay as they were."""
    from compress.state.session import Session
    from ctxmill.paths import sessions_dir
    from ctxmill.proxy import worker
    from ctxmill.proxy.server import uvicorn_options
    from tests.proxy_stages import CHAIN

    config = ProxyConfig(compress=SMALL, chain=CHAIN, persist=True, home=tmp_path, latency_budget_ms=None,
                         upstream_anthropic=upstream.url, upstream_openai=upstream.url)
    app = create_app(config)
    pool = app.state.proxy.workers
    calibrations: list[tuple] = []
    submit = pool.submit
    pool.submit = lambda key, fn, *args, **kw: (calibrations.append(args) if fn is worker.calibrate_request
                                                 else None) or submit(key, fn, *args, **kw)
    body = example()
    with ServerThread(app, **uvicorn_options(config)) as server:
        client, _ = anthropic_client(server.url)
        for _ in range(3):
            client.messages.create(model=body["model"], max_tokens=10, system=body["system"],
                                   messages=body["messages"][:5])
        [session] = stats(server)["sessions"]
    assert len(calibrations) == 1 and session["usage_reports"] == 3
    assert fake.received[-1].body == fake.received[-2].body == fake.received[-3].body
    state = Session.load(sessions_dir(tmp_path) / f"proxy-{session['session']}")
    assert state.header.calibration is not None


def test_headers_forwarded_hop_by_hop_dropped_and_secrets_never_logged(fake, proxy, caplog):
    caplog.set_level(logging.DEBUG)
    body = example()
    headers = {"x-api-key": SECRET, "authorization": f"Bearer {SECRET}", "anthropic-version": "2023-06-01",
               "anthropic-beta": "prompt-caching-2024-07-31", "connection": "keep-alive, x-hop", "x-hop": "1",
               "te": "trailers", "accept-encoding": "gzip", "content-type": "application/json"}
    r = httpx.post(proxy.url + "/v1/messages?beta=true", headers=headers,
                   content=orjson.dumps({**body, "stream": True}), timeout=TIMEOUT)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    got = fake.received[-1]
    assert got.query == "beta=true"
    for name in ("x-api-key", "authorization", "anthropic-version", "anthropic-beta"):
        assert got.headers[name] == headers[name]
    assert "x-hop" not in got.headers and "te" not in got.headers
    assert got.headers["accept-encoding"] == "identity"  # so usage can be read; bytes pass unchanged
    assert got.headers["content-length"] == str(len(got.body))
    assert any("/v1/messages" in rec.getMessage() for rec in caplog.records)
    assert SECRET not in caplog.text
    assert SECRET not in httpx.get(proxy.url + "/ctxmill/stats", timeout=TIMEOUT).text


def test_secrets_not_written_to_session_files(fake, start_proxy, tmp_path):
    proxy = start_proxy(home=tmp_path)
    client, _ = anthropic_client(proxy.url)
    body = example()
    client.messages.create(model=body["model"], max_tokens=10, system=body["system"], messages=body["messages"][:3])
    eventually(lambda: bool(list(tmp_path.rglob("state.jsonl"))))  # written beside the upstream round trip
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "state.jsonl" for p in files)
    assert all(SECRET.encode() not in p.read_bytes() for p in files)


def test_session_continues_after_restart(fake, start_proxy, tmp_path):
    """Without epochs a continued session renders its known prefix as before; a fresh session
    would compress the old results that have left the tail since."""
    body = example()
    first = start_proxy(home=tmp_path, compress=NO_EPOCHS)
    client, _ = anthropic_client(first.url)
    for n in (3, 5):
        client.messages.create(model=body["model"], max_tokens=10, system=body["system"], messages=body["messages"][:n])
    first.__exit__(None, None, None)
    second = start_proxy(home=tmp_path, compress=NO_EPOCHS)
    client, _ = anthropic_client(second.url)
    client.messages.create(model=body["model"], max_tokens=10, system=body["system"], messages=body["messages"][:7])
    [session] = stats(second)["sessions"]
    assert session["requests"] == session["usage_reports"] == 3  # stats continue across the restart
    assert session["epochs"] == 1
    before, after = fake.received[-2].json()["messages"], fake.received[-1].json()["messages"]
    assert after[:len(before)] == before  # the restarted proxy rendered the known prefix as before


def test_stats_written_beside_the_state_while_the_proxy_idles(fake, start_proxy, tmp_path):
    """A running proxy's worker writes a session's stats once it is idle (in batches, not per
    request), so a proxy that is killed later still finds them."""
    from ctxmill.proxy.stats import STATS_FILE

    proxy = start_proxy(home=tmp_path)
    client, _ = anthropic_client(proxy.url)
    body = example()
    for n in (3, 5):
        client.messages.create(model=body["model"], max_tokens=10, system=body["system"], messages=body["messages"][:n])
    written = lambda: [orjson.loads(p.read_bytes()) for p in tmp_path.rglob(STATS_FILE)]  # noqa: E731
    eventually(lambda: [s["requests"] for s in written()] == [1])  # a run brings the stats as of the request before


def test_upstream_errors_come_back_with_status_and_body(fake, proxy):
    for status in (429, 500):
        r = httpx.post(proxy.url + "/v1/messages", headers={"x-fake-status": str(status)},
                       content=orjson.dumps(example()), timeout=TIMEOUT)
        assert r.status_code == status and r.content == fake.sent[-1]
        r = httpx.post(proxy.url + "/v1/chat/completions", headers={"x-fake-status": str(status)},
                       json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}, timeout=TIMEOUT)
        assert r.status_code == status and r.content == fake.sent[-1]
    client, _ = anthropic_client(proxy.url)
    import anthropic

    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(model="m", max_tokens=1, messages=[{"role": "user", "content": "x"}],
                               extra_headers={"x-fake-status": "429"})


def test_upstream_down_gives_502_in_provider_shape(start_proxy):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    proxy = ServerThread(create_app(ProxyConfig(upstream_anthropic=dead, upstream_openai=dead, persist=False)))
    with proxy:
        r = httpx.post(proxy.url + "/v1/messages", json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
                       timeout=TIMEOUT)
        assert r.status_code == 502 and "unreachable" in r.json()["error"]["message"]  # it was: no connection
        assert r.json()["type"] == "error" and r.json()["error"]["type"] == "api_error"
        r = httpx.post(proxy.url + "/v1/chat/completions",
                       json={"model": "m", "messages": [{"role": "user", "content": "x"}]}, timeout=TIMEOUT)
        assert r.status_code == 502 and set(r.json()["error"]) >= {"message", "type"}
        assert httpx.get(proxy.url + "/ctxmill/stats", timeout=TIMEOUT).status_code == 200  # still serving


def test_client_disconnect_mid_stream_closes_upstream_and_keeps_serving(fake, proxy):
    body = {**example(), "stream": True}
    cancelled = fake.cancelled
    with httpx.Client() as client:
        with client.stream("POST", proxy.url + "/v1/messages", headers={"x-fake-slow": "100"},
                           content=orjson.dumps(body)) as r:
            assert r.status_code == 200
            next(r.iter_raw())
        # leaving the block closes the connection mid-stream
    eventually(lambda: fake.cancelled != cancelled)
    assert fake.cancelled == cancelled + 1  # the proxy stopped reading the upstream stream
    r = httpx.post(proxy.url + "/v1/messages", content=orjson.dumps(example()), timeout=TIMEOUT)
    assert r.status_code == 200


def test_30mb_body_passes_and_too_large_gets_413(fake, start_proxy):
    """A 30 MB file read in the protected tail reaches the upstream whole; over the limit: 413."""
    big = "line of a large data file that repeats\n" * (30 * 2**20 // 39)
    body = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/data/big.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": big}]}]}
    data = orjson.dumps(body)
    assert len(data) > 30 * 10**6
    proxy = start_proxy()
    r = httpx.post(proxy.url + "/v1/messages", content=data, timeout=60)
    assert r.status_code == 200 and len(fake.received[-1].body) >= len(big)
    small = start_proxy(max_body_bytes=2**20)
    r = httpx.post(small.url + "/v1/messages", content=data, timeout=60)
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"
    r = httpx.post(small.url + "/v1/chat/completions", content=b"x" * (2**20 + 1), timeout=TIMEOUT)
    assert r.status_code == 413 and "message" in r.json()["error"]
    assert httpx.post(small.url + "/v1/messages", content=orjson.dumps(example()), timeout=TIMEOUT).status_code == 200


@pytest.mark.parametrize("payload", [b"{not json", b"[1, 2]", b'{"model": "m"}', b"\xff\xfe"])
def test_unreadable_bodies_are_forwarded_untouched(fake, proxy, payload):
    r = httpx.post(proxy.url + "/v1/messages", content=payload, headers={"content-type": "application/json"},
                   timeout=TIMEOUT)
    assert fake.received[-1].body == payload  # the provider answers, as without the proxy
    assert r.content == fake.sent[-1]
    assert stats(proxy)["totals"]["requests"] == 0


def test_other_routes_forwarded_untouched(fake, proxy):
    r = httpx.get(proxy.url + "/v1/models?limit=5", headers={"authorization": "Bearer k"}, timeout=TIMEOUT)
    assert r.json() == {"method": "GET", "path": "/v1/models", "query": "limit=5"}
    r = httpx.delete(proxy.url + "/v1/files/file_1", headers={"x-api-key": "k"}, timeout=TIMEOUT)
    assert r.json()["method"] == "DELETE" and fake.received[-1].headers["x-api-key"] == "k"


def test_count_tokens_is_compressed_without_touching_the_session(fake, proxy):
    body = example()
    r = httpx.post(proxy.url + "/v1/messages/count_tokens", content=orjson.dumps(body), timeout=TIMEOUT)
    assert r.status_code == 200
    assert len(fake.received[-1].body) < len(orjson.dumps(body))
    assert stats(proxy)["sessions"] == []


def test_sessions_run_in_parallel_and_each_is_serialised(fake, proxy):
    body = example()
    errors: list[BaseException] = []

    def conversation(user: str) -> None:
        try:
            client, _ = anthropic_client(proxy.url)
            for n in (3, 5, 7, 9):
                client.messages.create(model=body["model"], max_tokens=10, system=body["system"],
                                       messages=body["messages"][:n], metadata={"user_id": user})
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=conversation, args=(f"user_{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    sessions = stats(proxy)["sessions"]
    assert len(sessions) == 4 and all(s["requests"] == 4 and s["failures"] == 0 for s in sessions)


def test_a_run_past_the_budget_sends_the_original_and_serves_the_next_request(fake, start_proxy, tmp_path):
    """The first run is held until the test releases it: that request and one arriving while the
    run still goes are sent as they are (so neither waited for it); once it finished, the
    session's next request is compressed and the compressed requests after it extend each
    other (cache-stable between switches)."""
    proxy = start_proxy(chain=HELD_CHAIN, compress=NO_EPOCHS, latency_budget_ms=300, workers=1)
    body = example()
    release = tmp_path / "release"
    body = held_until(body, release)
    send = prefix_sender(proxy.url, body, fake)

    assert send(5) == orjson.dumps({**body, "messages": body["messages"][:5]})  # answered while the run is held
    assert send(7) == orjson.dumps({**body, "messages": body["messages"][:7]})  # coalesced: no second run
    [session] = stats(proxy)["sessions"]
    assert session["deferred"] == 2 and session["tokens_before"] == 0  # the run has not finished
    release.touch()
    eventually(lambda: stats(proxy)["sessions"][0]["tokens_before"] > 0)  # the run finished in the background
    third, fourth = orjson.loads(send(9)), orjson.loads(send(11))
    assert b"deep_expand(" in orjson.dumps(third) and len(orjson.dumps(third)) < len(orjson.dumps(body["messages"][:9]))
    assert fourth["messages"][:9] == third["messages"]
    [session] = stats(proxy)["sessions"]
    assert session["requests"] == 4 and session["deferred"] == 2 and session["failures"] == 0
    assert stats(proxy)["totals"]["deferred"] == 2


def test_a_deferred_request_whose_run_finished_before_its_answer_calibrates(fake, start_proxy, tmp_path):
    """A request sent as it came (its run missed the budget) still calibrates the session when
    the run finished before the provider's answer: reported tokens over ctxmill's estimate of
    the original bytes, so the session's next request is sized as the provider counts it."""
    import threading

    from compress.state.session import Session

    proxy = start_proxy(home=tmp_path, chain=HELD_CHAIN, compress=NO_EPOCHS, latency_budget_ms=300, workers=1)
    release = tmp_path / "release"
    body = held_until(example(), release)
    send = prefix_sender(proxy.url, body, fake)
    fake.delay = 5.0  # the answer comes after the run, released below, finished
    try:
        sent = threading.Thread(target=send, args=(5,))
        sent.start()
        eventually(lambda: stats(proxy)["totals"]["deferred"] == 1)  # the original is at the upstream
        release.touch()
        eventually(lambda: stats(proxy)["sessions"][0]["tokens_before"] > 0)  # the run finished
        sent.join(TIMEOUT)
    finally:
        fake.delay = 0.0
    assert fake.received[-1].body == orjson.dumps({**body, "messages": body["messages"][:5]})
    [session] = stats(proxy)["sessions"]
    [folder] = [p.parent for p in tmp_path.rglob("state.jsonl")]
    eventually(lambda: Session.load(folder).header.calibration is not None)
    reported = len(fake.received[-1].body) // 4
    assert Session.load(folder).header.calibration == pytest.approx(reported / session["tokens_before"], abs=0.01)


def test_a_dead_worker_fails_open_and_is_replaced(fake, start_proxy):
    proxy = start_proxy(chain=CRASH_CHAIN, workers=1)
    body = example()
    doomed = {**body, "messages": [{"role": "user", "content": CRASH}, *body["messages"][1:]]}
    r = httpx.post(proxy.url + "/v1/messages", content=orjson.dumps(doomed), timeout=30)
    assert r.status_code == 200 and fake.received[-1].body == orjson.dumps(doomed)
    r = httpx.post(proxy.url + "/v1/messages", content=orjson.dumps(body), timeout=30)
    assert r.status_code == 200 and b"deep_expand(" in fake.received[-1].body  # a new worker compressed it
    failed, ok = sorted(stats(proxy)["sessions"], key=lambda s: -s["failures"])
    assert failed["failures"] == 1 and ok["failures"] == 0 and ok["saved"] > 0


def test_the_long_context_beta_scales_the_tiers(fake, start_proxy):
    """Claude Code 2.1 sends `anthropic-beta: …context-1m-…`: the ~21K-token example is at the
    high tier for 10K/20K thresholds, and at medium when it declares a 1M-token window (high ×5,
    medium absolute)."""
    proxy = start_proxy(compress=replace(SMALL, tiers=TierThresholds(medium=10_000, high=20_000)))
    tiers = []
    for beta in ("claude-code-20250219", "claude-code-20250219,context-1m-2025-08-07"):
        body = {**example(), "metadata": {"user_id": beta}}  # one session each
        r = httpx.post(proxy.url + "/v1/messages", content=orjson.dumps(body),
                       headers={"anthropic-beta": beta, "x-api-key": "k"})
        assert r.status_code == 200
        tiers.append(stats(proxy)["sessions"][0]["last_tier"])  # most recently used first
    assert tiers == ["high", "medium"]
