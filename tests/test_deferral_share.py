"""The share of proxied requests sent as they came past the latency budget: recorded in the
ledger, shown by `ctxmill stats`, the dashboard's summary and page, and checked by `doctor`."""

from __future__ import annotations

import sqlite3

from starlette.testclient import TestClient

from compress.formats.usage import Usage
from ctxmill import always_on
from ctxmill.commands import doctor
from ctxmill.commands import proxy as proxy_command
from ctxmill.dashboard.app import create_app
from ctxmill.ledger import record_request
from ctxmill.ledger.report import render, summary
from ctxmill.ledger.store import Ledger, Project
from ctxmill.proxy.books import ledger_row
from ctxmill.proxy.sessions import Outcome
from ctxmill.proxy.stats import RunSummary
from ctxmill.settings import Settings

PROJECT = Project("p", "proj")


def _record(ledger, deferred: bool, session: str = "s1") -> None:
    record_request(face="proxy", session=session, project=PROJECT, model="claude-sonnet-4-5", vendor="anthropic",
                   tokens_before=1000, tokens_after=1000 if deferred else 400, path=ledger, deferred=deferred)


def test_the_ledger_counts_deferred_requests_and_their_share(tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    for deferred in (True, False, False, False):
        _record(ledger, deferred)
    with Ledger.open(ledger) as opened:
        data = summary(opened)
    assert (data["totals"]["deferred"], data["totals"]["deferred_share"]) == (1, 0.25)
    [session] = data["sessions"]
    assert session["deferred_share"] == 0.25 and data["days"][0]["deferred"] == 1
    assert "1 of 4 requests (25.0%) sent as they came" in render(data)


def test_a_ledger_without_deferrals_says_nothing_of_them(tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    _record(ledger, False)
    with Ledger.open(ledger) as opened:
        data = summary(opened)
    assert data["totals"]["deferred_share"] == 0.0 and "sent as they came" not in render(data)


def test_a_schema_1_ledger_is_upgraded_in_place_keeping_its_rows(tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    _record(ledger, False)
    conn = sqlite3.connect(ledger)  # back to schema 1: the column did not exist
    conn.execute("ALTER TABLE requests DROP COLUMN deferred")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    _record(ledger, True)
    with Ledger.open(ledger) as opened:
        data = summary(opened)
    assert (data["totals"]["requests"], data["totals"]["deferred"]) == (2, 1)


def test_the_proxy_writes_a_deferred_request_as_deferred_and_unsaved():
    ran = RunSummary(b"{}", tokens_before=1000, tokens_after=400, model="claude-sonnet-4-5")
    usage = Usage(input=1000)
    deferred = ledger_row("s", "anthropic", Outcome(summary=ran, deferred=True), usage, None)
    sent = ledger_row("s", "anthropic", Outcome(summary=ran), usage, None)
    assert deferred.deferred and deferred.tokens_after == deferred.tokens_before == 1000
    assert not sent.deferred and sent.tokens_after == 400


def test_the_dashboard_shows_the_share(tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    _record(ledger, True)
    _record(ledger, False)
    settings = Settings.load(tmp_path / "proj" / ".ctxmill")
    client = TestClient(create_app(lambda: ledger, lambda: settings, token="t"), base_url="http://127.0.0.1:8788")
    assert client.get("/api/summary").json()["totals"]["deferred_share"] == 0.5
    assert 'id="total-deferred-share"' in client.get("/").text
    assert '"total-deferred-share"' in client.get("/static/dashboard.js").text


def test_doctor_flags_a_proxy_deferring_more_than_five_percent(monkeypatch, tmp_path):
    monkeypatch.setattr(always_on, "read_state", lambda home: {"port": 1})
    monkeypatch.setattr(always_on, "serving_pid", lambda port: 42)
    totals = {"requests": 100, "deferred": 12, "deferred_share": 0.12}
    monkeypatch.setattr(proxy_command, "fetch_stats", lambda host, port: {"totals": totals})
    name, problem = doctor._deferrals(tmp_path)
    assert "12 of 100 requests sent uncompressed (12.0%)" in name and "more than 5%" in problem
    assert "worker was busy" not in problem
    totals.update(deferred_behind=10)  # most of them waited behind other sessions' runs
    assert "10 of them because their worker was busy" in doctor._deferrals(tmp_path)[1]
    totals.update(deferred=3, deferred_share=0.03)
    assert doctor._deferrals(tmp_path)[1] is None
    monkeypatch.setattr(always_on, "serving_pid", lambda port: None)
    assert doctor._deferrals(tmp_path) is None  # no proxy running: nothing to say
