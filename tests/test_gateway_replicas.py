"""Proxy replicas over one Redis: any replica renders the same bytes, every marker expands from
any of them, and a Redis that goes away fails open (bodies unchanged, said in the stats)."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import httpx
import orjson
import pytest

from ccr.expand import expand_first
from ccr.markers import find_markers
from tests.proxy_fixtures import fake, start_proxy, upstream  # noqa: F401
from tests.proxy_helpers import example
from tests.redis_fixture import RedisServer, fresh_address


def requests_of(body: dict) -> list[dict]:
    """The conversation as its client sends it: request k holds the first k messages (k ending on a user turn)."""
    messages = body["messages"]
    return [{**body, "messages": messages[:k]} for k in range(1, len(messages) + 1) if messages[k - 1]["role"] == "user"]


def send(url: str, body: dict) -> httpx.Response:
    return httpx.post(url + "/v1/messages", content=orjson.dumps(body), timeout=30,
                      headers={"content-type": "application/json", "x-api-key": "sk-test"})


def test_replicas_render_the_bytes_of_one_process_and_every_marker_expands(fake, start_proxy, redis_server):
    shared, alone = fresh_address(redis_server), fresh_address(redis_server)
    replicas = [start_proxy(store=shared, workers=1) for _ in range(3)]
    reference = start_proxy(store=alone, workers=1)
    turns = requests_of(example())
    pick = random.Random(25)
    on_replicas, in_one = [], []
    for body in turns:
        assert send(pick.choice(replicas).url, body).status_code == 200
        on_replicas.append(fake.received[-1].body)
        assert send(reference.url, body).status_code == 200
        in_one.append(fake.received[-1].body)
    assert on_replicas == in_one
    assert on_replicas[-1] != orjson.dumps(turns[-1])  # compressed, not passed through
    keys = {m.key for sent in on_replicas for m in find_markers(sent.decode())}
    assert keys
    for key in keys:  # the MCP server's deep_expand and `ctxmill expand` read the store this way
        assert expand_first([], key, shared=shared).ok, key
    stats = httpx.get(replicas[0].url + "/ctxmill/stats").json()
    assert stats["store"] == shared.shown and stats["totals"]["store_failures"] == 0


def test_expand_and_the_mcp_server_read_the_shared_store(fake, start_proxy, redis_server, tmp_path):
    shared = fresh_address(redis_server)
    proxy = start_proxy(store=shared, workers=1)
    for body in requests_of(example()):
        send(proxy.url, body)
    key = next(m.key for m in find_markers(fake.received[-1].body.decode()))
    url = f"{redis_server.url}?prefix={shared.prefix}"
    assert mcp_deep_expand(url, key, tmp_path).startswith("1\t")  # the MCP server on the same store
    own = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "own")}  # an embedded store no other test wrote to
    found = subprocess.run([sys.executable, "-m", "ctxmill", "expand", key, "--store", url, "--home", str(tmp_path)],
                           capture_output=True, timeout=60, env=own)
    assert found.returncode == 0 and found.stdout, found.stderr
    elsewhere = subprocess.run([sys.executable, "-m", "ctxmill", "expand", key, "--home", str(tmp_path)],
                               capture_output=True, timeout=60, env=own)
    assert elsewhere.returncode == 1  # not in the user's embedded store: it went to Redis only


def mcp_deep_expand(store_url: str, key: str, folder) -> str:
    """`deep_expand(key, lines="1:2")` through `ctxmill mcp --store` on stdio."""
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def talk() -> str:
        params = StdioServerParameters(command=sys.executable, args=["-m", "ctxmill", "mcp", "--store", store_url],
                                       cwd=str(folder), env=dict(os.environ))  # the store key with it
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            found = await session.call_tool("deep_expand", {"key": key, "lines": "1:2"})
            assert not found.is_error, found.content
            return found.content[0].text
    return asyncio.run(talk())


def test_redis_going_away_fails_open_and_says_so(fake, start_proxy, tmp_path):
    server = RedisServer(pytest.importorskip("shutil").which("redis-server") or pytest.skip("no redis-server"),
                         tmp_path)
    server.start()
    try:
        shared = fresh_address(server)
        proxy = start_proxy(store=shared, workers=1)
        turns = requests_of(example())
        assert send(proxy.url, turns[-2]).status_code == 200
        assert fake.received[-1].body != orjson.dumps(turns[-2])  # compressed while Redis is up
        server.stop()
        for body in turns[-2:]:
            assert send(proxy.url, body).status_code == 200
            assert fake.received[-1].body == orjson.dumps(body)  # passed through unchanged
        stats = httpx.get(proxy.url + "/ctxmill/stats").json()
        assert stats["totals"]["store_failures"] == 2 and stats["totals"]["failures"] == 2
        server.start()
        assert send(proxy.url, turns[-1]).status_code == 200
        assert fake.received[-1].body != orjson.dumps(turns[-1])  # compressed again
    finally:
        server.stop()


def test_no_secret_the_client_sent_is_at_rest_in_redis(fake, start_proxy, redis_server):
    from ground.redis_client import connect

    secret = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
    body = example()
    result = next(b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
                  if b.get("type") == "tool_result" and isinstance(b.get("content"), str))
    result["content"] = f"export GITHUB_TOKEN={secret}\n" + result["content"]
    shared = fresh_address(redis_server)
    proxy = start_proxy(store=shared, workers=1)
    for turn in requests_of(body):
        assert send(proxy.url, turn).status_code == 200
    client = connect(shared)
    values = []
    for key in client.scan_iter(match=shared.prefix + "*"):
        kind = client.type(key)
        if kind == b"string":
            values.append(client.get(key))
        elif kind == b"hash":
            values += client.hgetall(key).values()
    client.close()
    at_rest = b"\n".join(values)
    assert secret.encode() not in at_rest
    assert b"[REDACTED" in at_rest  # what held it was stored, redacted or sealed
