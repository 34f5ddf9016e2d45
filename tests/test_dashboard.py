"""The dashboard's server side without a browser: its API reads the ledger and memory as they are
now, its write actions refuse cross-site requests and requests without the page's token, the
proxy answers GET / itself, and `ctxmill dashboard` binds loopback and fails on a taken port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from ctxmill.dashboard.app import TOKEN_HEADER, create_app, page
from ctxmill.ledger import record_request
from ctxmill.ledger.store import Project
from ctxmill.settings import Settings
from memory import api
from tests.proxy_fixtures import fake, start_proxy, upstream  # noqa: F401 - fixtures

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def dashboard(tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    settings = Settings.load(tmp_path / "proj" / ".ctxmill")
    app = create_app(lambda: ledger, lambda: settings, token="the-token")
    return TestClient(app, base_url="http://127.0.0.1:8788"), ledger, settings


def test_the_api_reads_the_ledger_at_request_time(dashboard):
    client, ledger, _ = dashboard
    assert client.get("/api/summary").json()["totals"]["requests"] == 0
    record_request(face="cli", session="s1", project=Project("p", "proj"), model="gpt-5", vendor="openai",
                   tokens_before=1000, tokens_after=250, path=ledger)
    assert client.get("/api/summary").json()["totals"]["tokens_saved"] == 750
    [row] = client.get("/api/session", params={"id": "s1"}).json()["requests"]
    assert (row["tokens_before"], row["tokens_after"]) == (1000, 250)
    index = client.get("/")
    assert 'content="the-token"' in index.text and "default-src 'self'" in index.headers["content-security-policy"]
    assert client.get("/static/chart.umd.min.js").text.startswith("/*!\n * Chart.js v4")
    assert client.get("/static/..%2Fapp.py").status_code == 404


def test_the_summary_keeps_to_the_period_asked_for(dashboard):
    import time

    from ctxmill.ledger.store import Ledger, RequestRow

    client, ledger, _ = dashboard
    now = time.time()
    with Ledger.open(ledger) as db:
        for ago, saved in ((40 * 86400, 100), (3600, 50)):
            db.add_request(
                RequestRow(
                    "cli",
                    f"s{ago}",
                    Project("p", "proj"),
                    "gpt-5",
                    "gpt-5",
                    1000,
                    1000 - saved,
                    0.1,
                    0.05,
                    stages={"trim_outputs": saved},
                    ts=now - ago,
                )
            )
    assert client.get("/api/summary").json()["totals"]["tokens_saved"] == 150
    month = client.get("/api/summary", params={"since": now - 30 * 86400}).json()
    assert (
        month["totals"]["tokens_saved"] == 50 == sum(s["tokens"] for s in month["saved_by_stage"])
    )
    assert month["range"] == {"since": now - 30 * 86400, "until": None} and len(month["days"]) == 1
    old = client.get("/api/summary", params={"until": now - 86400}).json()
    assert old["totals"]["requests"] == 1 and old["sessions"][0]["session"] == f"s{40 * 86400}"
    for bad in ("yesterday", "nan", "inf"):
        assert client.get("/api/summary", params={"since": bad}).status_code == 400


def test_write_actions_need_the_token_and_the_same_origin(dashboard):
    client, _, settings = dashboard
    entry = api.store(settings.memory, "fact", "The dashboard listens on 127.0.0.1 only")
    refused = [
        {},  # no token
        {TOKEN_HEADER: "wrong"},
        {TOKEN_HEADER: "the-token", "origin": "http://evil.example"},
        {TOKEN_HEADER: "the-token", "sec-fetch-site": "cross-site"},
        {TOKEN_HEADER: "the-token", "origin": "null"},
    ]
    for headers in refused:
        assert client.post("/api/memory/forget", json={"id": entry.id}, headers=headers).status_code == 403, headers
        assert client.post("/api/memory/pin", json={"id": entry.id}, headers=headers).status_code == 403, headers
    assert [e.id for e in api.list_entries(settings.memory)] == [entry.id] and not api.pinned(settings.memory)
    ok = {TOKEN_HEADER: "the-token", "origin": "http://127.0.0.1:8788", "sec-fetch-site": "same-origin"}
    assert client.post("/api/memory/pin", json={"id": entry.id}, headers=ok).json()["pinned"] is True
    assert client.post("/api/memory/pin", content=b"{", headers=ok).status_code == 400
    assert client.post("/api/memory/forget", json={"id": "m-00000000"}, headers=ok).status_code == 404
    assert client.post("/api/memory/forget", json={"id": entry.id}, headers=ok).status_code == 200
    assert api.list_entries(settings.memory) == []


def test_memory_view_searches_lists_and_shows_the_checkpoint(dashboard):
    client, _, settings = dashboard
    a = api.store(settings.memory, "decision", "Chart.js draws the dashboard")
    api.store(settings.memory, "fact", "Unrelated fact about billing", pin=True)
    (settings.home / "checkpoint.md").write_text("## Task\nmake charts\n")
    listed = client.get("/api/memory").json()
    assert len(listed["entries"]) == 2 and [p["text"] for p in listed["pinned"]] == ["Unrelated fact about billing"]
    assert listed["checkpoint"] == "## Task\nmake charts\n"
    assert [e["id"] for e in client.get("/api/memory", params={"q": "chart dashboard"}).json()["entries"]] == [a.id]


def test_a_standalone_page_embeds_data_that_cannot_close_its_script_tag():
    html = page(data_json=json.dumps({"title": "</script><script>alert(1)</script>"}), inline=True)
    assert html.count("</script>") == 3  # chart.js, dashboard.js, the data: the title's tag is escaped
    assert "static/" not in html and "<script src" not in html


def test_the_proxy_serves_its_own_root_page_and_the_dashboard(fake, start_proxy, tmp_path):
    import httpx

    proxy = start_proxy(home=tmp_path / "home", ledger_file=tmp_path / "ledger.sqlite3")
    root = httpx.get(proxy.url + "/")
    assert root.status_code == 200 and 'href="/ctxmill/"' in root.text
    assert httpx.get(proxy.url + "/ctxmill", follow_redirects=True).url.path == "/ctxmill/"
    assert httpx.get(proxy.url + "/ctxmill/api/summary").json()["totals"]["requests"] == 0
    assert httpx.get(proxy.url + "/ctxmill/stats").json()["sessions"] == []
    assert fake.received == []  # nothing of it went upstream
    httpx.get(proxy.url + "/v1/models")
    assert [r.path for r in fake.received] == ["/v1/models"]  # the rest is still forwarded


def test_the_dashboard_command_refuses_a_taken_port(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "ctxmill", "dashboard", "--no-browser", "--port", str(port)],
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert out.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in out.stderr
