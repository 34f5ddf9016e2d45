"""DNS rebinding: a web page whose name resolves to 127.0.0.1 reached the dashboard as if it were
the dashboard's own page: it read the page (and its token) and `POST /api/memory/forget` deleted
an entry, on `ctxmill dashboard` and on the proxy's `/ctxmill/`. Every request that reaches a
loopback address must name a loopback host (ctxmill.proxy.browsers.LoopbackHost)."""

from __future__ import annotations

import httpx
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from ctxmill.dashboard.app import TOKEN_HEADER, create_app
from ctxmill.proxy.browsers import foreign_host
from ctxmill.proxy.server import served_app, uvicorn_options
from ctxmill.proxy_config import ProxyConfig
from ctxmill.settings import Settings
from memory import api
from tests.fake_upstream import ServerThread
from tests.proxy_fixtures import fake, upstream  # noqa: F401 - fixtures
from tests.proxy_helpers import example

REBOUND = ["evil.example", "evil.example:8788", "127.0.0.1.evil.example", "localhost.evil.example:80",
           "[::1].evil.example", "0x7f000001.nip.io", "", "127.0.0.1:8788@evil.example"]
LOOPBACK = ["127.0.0.1:8788", "127.0.0.1", "localhost:8788", "LOCALHOST", "[::1]:8788", "127.1.2.3:9",
            "dashboard.localhost:8788", "localhost."]


def _forget(client, entry_id: str, host: str) -> int:
    origin = f"http://{host}"  # the page's own origin: same-origin as far as the browser knows
    return client.post("/api/memory/forget", json={"id": entry_id}, headers={
        "host": host, "origin": origin, "sec-fetch-site": "same-origin", TOKEN_HEADER: "the-token"}).status_code


@pytest.mark.parametrize("host", REBOUND)
def test_a_rebound_name_gets_neither_the_dashboard_page_nor_its_api(tmp_path, host):
    settings = Settings.load(tmp_path / "proj" / ".ctxmill")
    client = TestClient(create_app(lambda: tmp_path / "ledger.sqlite3", lambda: settings, token="the-token"),
                        base_url="http://127.0.0.1:8788")
    entry = api.store(settings.memory, "fact", "The dashboard listens on 127.0.0.1 only")
    page = client.get("/", headers={"host": host})
    assert page.status_code == 403 and "the-token" not in page.text and "refused" in page.json()["error"]["message"]
    for path in ("/api/summary", "/api/memory", "/static/dashboard.js"):
        assert client.get(path, headers={"host": host}).status_code == 403
    assert _forget(client, entry.id, host) == 403
    assert [e.id for e in api.list_entries(settings.memory)] == [entry.id]


@pytest.mark.parametrize("host", ["127.0.0.1:8788", "localhost:8788", "[::1]:8788"])
def test_the_dashboard_still_works_under_its_loopback_names(tmp_path, host):
    settings = Settings.load(tmp_path / "proj" / ".ctxmill")
    client = TestClient(create_app(lambda: tmp_path / "ledger.sqlite3", lambda: settings, token="the-token"),
                        base_url="http://127.0.0.1:8788")
    entry = api.store(settings.memory, "fact", "The dashboard listens on 127.0.0.1 only")
    assert 'content="the-token"' in client.get("/", headers={"host": host}).text
    assert _forget(client, entry.id, host) == 200 and api.list_entries(settings.memory) == []


def test_the_proxy_refuses_a_rebound_name_on_its_dashboard_and_every_route(fake, tmp_path):
    home = tmp_path / "home"
    settings = Settings.load(home)
    entry = api.store(settings.memory, "fact", "Kept: the proxy's project memory")
    config = ProxyConfig(upstream_anthropic=fake.url, upstream_openai=fake.url, home=home, persist=False)
    with ServerThread(served_app(config, "127.0.0.1"), **uvicorn_options(config)) as proxy:
        port = proxy.url.rsplit(":", 1)[1]
        rebound = {"host": f"evil.example:{port}"}
        for path in ("/", "/ctxmill/", "/ctxmill/api/memory", "/ctxmill/stats"):
            assert httpx.get(proxy.url + path, headers=rebound, trust_env=False).status_code == 403, path
        page = httpx.get(proxy.url + "/ctxmill/", trust_env=False)
        token = page.text.split('name="ctxmill-token" content="', 1)[1].split('"', 1)[0]
        forget = httpx.post(proxy.url + "/ctxmill/api/memory/forget", json={"id": entry.id}, trust_env=False,
                            headers={**rebound, "origin": f"http://evil.example:{port}", TOKEN_HEADER: token})
        assert forget.status_code == 403 and [e.id for e in api.list_entries(settings.memory)] == [entry.id]
        sent = httpx.post(proxy.url + "/v1/messages", content=orjson.dumps(example()), trust_env=False,
                          headers={**rebound, "content-type": "application/json", "x-api-key": "sk-ant-api03-k"})
        assert sent.status_code == 403 and fake.received == []
        agent = httpx.post(proxy.url + "/v1/messages", content=orjson.dumps(example()), trust_env=False,
                           headers={"content-type": "application/json", "x-api-key": "sk-ant-api03-k"})
        assert agent.status_code == 200 and len(fake.received) == 1


def test_a_proxy_listening_for_other_machines_keeps_its_clients_names(fake, tmp_path):
    """A gateway (`--host 0.0.0.0 --allow-remote`) is named as its clients know it, even by a load
    balancer on the same machine."""
    config = ProxyConfig(upstream_anthropic=fake.url, upstream_openai=fake.url, home=tmp_path, persist=False)
    with ServerThread(served_app(config, "0.0.0.0"), **uvicorn_options(config)) as proxy:
        sent = httpx.post(proxy.url + "/v1/messages", content=orjson.dumps(example()), trust_env=False,
                          headers={"host": "gateway.corp.example", "content-type": "application/json"})
        assert sent.status_code == 200


@given(name=st.from_regex(r"[a-z0-9-]{1,20}(\.[a-z0-9-]{1,10}){0,3}", fullmatch=True), port=st.integers(1, 65535))
def test_only_loopback_names_pass_on_a_loopback_address(name, port):
    loopback = name == "localhost" or name.endswith(".localhost")
    assert (foreign_host(f"{name}:{port}", "127.0.0.1") is None) == loopback
    assert foreign_host(f"{name}:{port}", "192.0.2.7") is None  # not a loopback listener: not this rule
    for host in LOOPBACK:
        assert foreign_host(host, "127.0.0.1") is None and foreign_host(host, "::1") is None
