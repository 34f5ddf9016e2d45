"""Slow, stalled, vanishing and greedy clients against the proxy, over loopback sockets: real
requests keep being served, stalled connections are closed, each disconnect is one log line,
and the request bodies held at once stay within the in-flight limit."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import threading
from contextlib import ExitStack
from pathlib import Path

import httpx
import orjson
import pytest

from tests.helpers import eventually
from tests.proxy_fixtures import fake, server_log, start_proxy, tracebacks, upstream  # noqa: F401 - fixtures
from tests.proxy_helpers import example
from tests.reliability import rawnet
from tests.reliability.tally import record

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120  # seconds; liveness bounds on a busy machine, not speed claims
HALF_HEADERS = b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: applic"


def _real_request(url: str) -> int:
    return httpx.post(url + "/v1/messages", content=orjson.dumps(example()), timeout=TIMEOUT).status_code


def _open_half_sent(port: int, count: int, stack: ExitStack) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = stack.enter_context(rawnet.connect(port))
        sock.sendall(HALF_HEADERS)
        socks.append(sock)
    return socks


def test_half_sent_requests_are_closed_and_real_requests_get_through(fake, start_proxy, server_log):
    """300 connections that never finish their headers, with room for 64: each real request
    still gets through, and every stalled connection is closed by the proxy."""
    proxy = start_proxy(client_timeout=2.0, max_connections=64)
    served = []
    with ExitStack() as stack:
        socks = _open_half_sent(proxy.port, 300, stack)
        served += [_real_request(proxy.url) for _ in range(5)]
        closed = sum(rawnet.is_closed_by_peer(s, wait=TIMEOUT) for s in socks)
    served.append(_real_request(proxy.url))
    record("slow clients", "300 half-sent request headers, 64 connections allowed", 300,
           lost=len(served) - served.count(200))
    assert served == [200] * 6 and closed == 300
    assert tracebacks(server_log) == []
    assert sum("client connection closed" in r.getMessage() for r in server_log.records) >= 300 - 64


def test_a_thousand_half_sent_requests_under_a_1024_descriptor_limit(tmp_path):
    """`ctxmill proxy --max-connections 600` started with 1,024 open files at most, 1,000
    connections that never finish their headers, 250 at a time: the proxy fits max_connections to
    the limit, a real request after each batch is served, and every half-sent connection is
    closed by the proxy (within client_timeout at the latest: none is held forever)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:  # this process holds the 1,000 client sockets
        if hard != resource.RLIM_INFINITY and hard < 2048:
            pytest.skip(f"the open-file limit of the test process is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
    up_port, proxy_port = _free_port(), _free_port()
    home, mine = tmp_path / "home", tmp_path / "xdg" / "ctxmill"
    home.mkdir()
    mine.mkdir(parents=True)
    (mine / "config.toml").write_text("[proxy]\nclient_timeout = 3\n")  # the user's own config
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXMILL_HOME": str(home),
           "XDG_DATA_HOME": str(mine.parent)}
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))  # noqa: E731
    fake_up = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_upstream.py"), "--port", str(up_port)],
                               env=env, stderr=subprocess.DEVNULL)
    proxy = subprocess.Popen([sys.executable, "-m", "ctxmill", "proxy", "--port", str(proxy_port),
                              "--upstream-anthropic", f"http://127.0.0.1:{up_port}", "--max-connections", "600",
                              "--log-level", "warning"], env=env, preexec_fn=limit, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{proxy_port}"
    try:
        _wait_until_serving(url)
        served, closed = [], 0
        with ExitStack() as stack:
            socks = []
            for _ in range(4):
                socks += _open_half_sent(proxy_port, 250, stack)
                served.append(_real_request(url))
            closed = sum(rawnet.is_closed_by_peer(s, wait=TIMEOUT) for s in socks)
        record("slow clients", "1,000 half-sent request headers to `ctxmill proxy` under a 1,024-file limit", 1000,
               lost=len(served) - served.count(200))
        assert served == [200] * 4 and closed == 1000
    finally:
        proxy.terminate()
        fake_up.terminate()
        stderr = proxy.communicate(timeout=60)[1]
        fake_up.wait(timeout=60)
    assert "max_connections lowered from 600 to 480" in stderr and "Traceback" not in stderr  # the proxy logs there


def test_a_stalled_body_gets_408_and_a_vanished_client_one_log_line(fake, start_proxy, server_log):
    proxy = start_proxy(client_timeout=1.0)
    with rawnet.connect(proxy.port) as sock:
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{\"mess")
        sock.settimeout(TIMEOUT)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 408") and b"no request body bytes for 1 s" in answer
    for _ in range(20):  # vanish halfway through the body
        with rawnet.connect(proxy.port) as sock:
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{\"mess")
    eventually(lambda: sum("client disconnected" in r.getMessage() for r in server_log.records) == 20)
    served = _real_request(proxy.url)
    record("slow clients", "stalled or abandoned request bodies, then a request", 21, lost=served != 200)
    assert served == 200
    assert tracebacks(server_log) == []


def test_oversized_headers_get_431(start_proxy):
    proxy = start_proxy()
    with rawnet.connect(proxy.port) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nhost: x\r\n")
        try:
            for i in range(2000):
                sock.sendall(b"x-filler-%d: %s\r\n" % (i, b"f" * 500))
        except (BrokenPipeError, ConnectionResetError):
            pass
        sock.settimeout(TIMEOUT)
        answer = sock.recv(65536)
    record("slow clients", "endless request headers (431)", 1, lost=not answer.startswith(b"HTTP/1.1 431"))
    assert answer.startswith(b"HTTP/1.1 431")


def test_when_every_connection_is_busy_a_new_one_gets_503(fake, start_proxy):
    proxy = start_proxy(max_connections=3)
    fake.delay = 2.0
    try:
        results: list[int] = []
        threads = [threading.Thread(target=lambda: results.append(_real_request(proxy.url))) for _ in range(3)]
        for t in threads:
            t.start()
        eventually(lambda: len(fake.received) == 3)  # three requests in progress
        with rawnet.connect(proxy.port) as sock:
            sock.settimeout(TIMEOUT)
            answer = sock.recv(65536)
        for t in threads:
            t.join()
    finally:
        fake.delay = 0.0
    results.append(_real_request(proxy.url))
    record("slow clients", "a connection beyond max_connections while all are busy (503), then 4 requests", 5,
           lost=4 - results.count(200))
    assert answer.startswith(b"HTTP/1.1 503") and b"max_connections" in answer
    assert results == [200] * 4


def _big_body(i: int, size: int) -> bytes:
    body = example()
    out = "x" * size
    messages = [*body["messages"][:1], {"role": "user", "content": f"{i}{out}"}]
    return orjson.dumps({**body, "messages": messages})


def test_concurrent_large_bodies_stay_within_the_inflight_limit(fake, start_proxy):
    """8 bodies of 1.5 MB at once with room for 4 MB: each waits for room, all arrive, the
    proxy never held more than the limit and holds nothing after."""
    proxy = start_proxy(max_inflight_bytes=4 * 2**20, max_body_bytes=2 * 2**20, client_timeout=60)
    statuses = _concurrently(proxy.url, [_big_body(i, 3 * 2**19) for i in range(8)])
    inflight = httpx.get(proxy.url + "/ctxmill/stats", timeout=TIMEOUT).json()["inflight"]
    record("slow clients", "concurrent 1.5 MB bodies, 4 MB in-flight limit", 8, lost=8 - statuses.count(200))
    assert statuses == [200] * 8 and len(fake.received) == 8
    assert 0 < inflight["peak_bytes"] <= 4 * 2**20 and inflight["held_bytes"] == 0


def test_bodies_without_room_in_time_get_503_that_says_why(fake, start_proxy):
    proxy = start_proxy(max_inflight_bytes=4 * 2**20, max_body_bytes=2 * 2**20, client_timeout=0.5)
    fake.delay = 3.0  # each admitted body is held until the upstream answers
    try:
        bodies = [_big_body(i, 3 * 2**19) for i in range(6)]
        responses = _concurrently(proxy.url, bodies, text=True)
    finally:
        fake.delay = 0.0
    refused = [r for r in responses if r != 200]
    record("slow clients", "1.5 MB bodies without room in time (503 that says why)", len(bodies),
           lost=len(bodies) - len(refused) - len(fake.received))  # neither delivered nor refused
    assert responses.count(200) == len(fake.received) >= 2 and refused
    assert all("request bodies in flight" in r and "--max-inflight-mb" in r for r in refused)
    inflight = httpx.get(proxy.url + "/ctxmill/stats", timeout=TIMEOUT).json()["inflight"]
    assert inflight["held_bytes"] == 0 and inflight["refused"] == len(refused)


def _concurrently(url: str, bodies: list[bytes], text: bool = False) -> list:
    results: list = [None] * len(bodies)

    def send(i: int) -> None:
        r = httpx.post(url + "/v1/messages", content=bodies[i], timeout=TIMEOUT)
        results[i] = r.status_code if r.status_code == 200 or not text else r.text

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_serving(url: str) -> None:
    def up() -> bool:
        try:
            return httpx.get(url + "/ctxmill/stats", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    eventually(up)
