"""The savings ledger: prices, modelled costs, the SQLite store (many processes, restarts, no
secrets), the roll-ups `ctxmill stats` prints, and the command itself."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import stat
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.formats.usage import Usage
from compress.model_prices import PRICES, price_for
from ctxmill.ledger import modelled_costs, project_of, record_expansion, record_request
from ctxmill.ledger.report import STAGE_KINDS, render, session_requests, summary
from ctxmill.ledger.store import SCHEMA_VERSION, Ledger, LedgerError, Project


def test_prices_match_dated_and_routed_model_names():
    assert price_for("claude-sonnet-4-5-20250929").name == "claude-sonnet-4-5"
    assert price_for("anthropic/claude-opus-4-5").name == "claude-opus-4-5"
    assert price_for("anthropic.claude-3-5-haiku-20241022-v1:0").name == "claude-3-5-haiku"
    assert price_for("us.anthropic.claude-opus-5-5-v1:0").name == "claude-opus-5-5"  # Bedrock, regional
    assert price_for("gpt-5-mini-2025-08-07").name == "gpt-5-mini"  # not plain gpt-5
    assert price_for("GPT-4.1-nano").name == "gpt-4.1-nano"
    assert price_for("openai/gpt-5-codex").name == "gpt-5"
    assert price_for("gpt-5.6-sol-2026-07-09").name == "gpt-5.6-sol"
    assert price_for("gpt-5.9").name == "gpt-5 (fallback)"  # another generation is not a gpt-5
    assert price_for("claude-sonnet-5-5[1m]").name == "claude-sonnet-5-5"
    assert price_for("gpt-5.3-codex").name == "gpt-5.3" and price_for("gpt-6.2-sol").name == "gpt-6.2-sol"


def test_unknown_models_fall_back_by_vendor_and_say_so():
    anthropic = price_for("some-new-model", "anthropic")
    assert anthropic.name == "claude-sonnet-4-5 (fallback)" and anthropic.input == 3.0
    assert price_for("llama-70b", "openai").name == "gpt-5 (fallback)"
    assert price_for("claude-next", "").name == "claude-sonnet-4-5 (fallback)"


def test_every_price_row_is_ordered_sensibly():
    for p in PRICES:
        assert 0 < p.cache_read < p.input <= p.cache_write and p.output > p.input, p
    assert len({p.name for p in PRICES}) == len(PRICES)


def test_openai_charges_cache_writes_from_the_gpt_5_6_family_on():
    assert price_for("gpt-5.5").write_ratio == 1.0 and price_for("gpt-5.4-mini").write_ratio == 1.0
    for model in ("gpt-5.6-terra", "gpt-6-sol", "gpt-6.1-terra", "gpt-6.2-sol"):
        assert price_for(model).write_ratio == 1.25, model
    assert price_for("gpt-6.2-sol").read_ratio == 0.05 == price_for("claude-opus-5-5").read_ratio


def test_costs_without_usage_are_uncached_input():
    price = price_for("claude-sonnet-4-5")
    assert modelled_costs(price, 1_000_000, 250_000) == (3.0, 0.75)


def test_costs_with_usage_scale_the_prompt_part_only():
    price = price_for("claude-sonnet-4-5")
    usage = Usage(input=100_000, cache_read=0, cache_write=0, output=1_000_000)
    without, with_ = modelled_costs(price, 200, 100, usage)
    assert with_ == pytest.approx(0.3 + 15.0)
    assert without == pytest.approx(0.6 + 15.0)


def test_project_ids_hash_the_path_and_keep_the_name(tmp_path):
    p = project_of(tmp_path / "my-app")
    assert p.name == "my-app" and len(p.id) == 16 and str(tmp_path) not in p.id
    assert project_of(tmp_path / "my-app") == p and project_of(tmp_path / "other").id != p.id
    assert project_of(None) == Project()


def _request(path, session="s", tokens=(100, 40), model="claude-sonnet-4-5", usage=None, stages=None, project="a"):
    record_request(face="test", session=session, project=Project(project + "-id", project), model=model,
                   vendor="anthropic", tokens_before=tokens[0], tokens_after=tokens[1], usage=usage,
                   stages=stages, path=path)


def test_rows_roll_up_per_project_day_session_stage_and_kind(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    _request(path, "s1", (1000, 400), stages={"trim_outputs": 500, "crush_json": 100}, project="a")
    _request(path, "s1", (2000, 900), stages={"trim_outputs": 1000, "nudges": -20}, project="a")
    _request(path, "s2", (300, 300), project="b")
    record_expansion(face="cli", chars=10, session="s1", project=Project("a-id", "a"), path=path)
    with Ledger.open(path) as ledger:
        data = summary(ledger)
        requests = session_requests(ledger, "s1")
    t = data["totals"]
    assert (t["requests"], t["tokens_before"], t["tokens_after"], t["tokens_saved"]) == (3, 3300, 1600, 1700)
    assert (t["sessions"], t["projects"], t["expansions"]) == (2, 2, 1)
    assert t["cost_saved"] == round(t["cost_without"] - t["cost_with"], 6) > 0
    a = next(p for p in data["projects"] if p["project"] == "a")
    assert (a["requests"], a["tokens_saved"], a["expansions"]) == (2, 1700, 1)
    assert [d["requests"] for d in data["days"]] == [3]
    assert {s["session"]: s["requests"] for s in data["sessions"]} == {"s1": 2, "s2": 1}
    assert {s["stage"]: s["tokens"] for s in data["stages"]} == {"trim_outputs": 1500, "crush_json": 100,
                                                                  "nudges": -20}
    assert {k["kind"] for k in data["kinds"]} == {STAGE_KINDS[s] for s in ("trim_outputs", "crush_json", "nudges")}
    assert [(r["tokens_before"], r["tokens_after"]) for r in requests] == [(1000, 400), (2000, 900)]
    assert "3 requests in 2 sessions" in render(data)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("xyz"), st.integers(0, 10**7), st.integers(0, 10**7)), max_size=8))
def test_totals_are_the_sums_of_the_rows(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite3"
    for session, before, after in rows:
        _request(path, session, (before, after))
    with Ledger.open(path) as ledger:
        data = summary(ledger)
    t = data["totals"]
    assert t["requests"] == len(rows)
    assert t["tokens_before"] == sum(r[1] for r in rows) == sum(s["tokens_before"] for s in data["sessions"])
    assert t["cost_with"] == pytest.approx(sum(d["cost_with"] for d in data["days"]), abs=1e-5)
    assert t["cost_with"] == pytest.approx(sum(price_for("claude-sonnet-4-5").cost(input=r[2]) for r in rows),
                                           abs=1e-5)


def test_every_stage_of_the_pipeline_has_a_kind_of_content():
    from compress.runner.pipeline import DEFAULT_STAGES

    assert {s.name for s in DEFAULT_STAGES} == set(STAGE_KINDS)


def _at(path, ts, session="s", tokens=(100, 40), stages=None, model="claude-sonnet-4-5"):
    from ctxmill.ledger.store import RequestRow

    with Ledger.open(path) as ledger:
        ledger.add_request(
            RequestRow(
                "test",
                session,
                Project("a-id", "a"),
                model,
                model,
                tokens[0],
                tokens[1],
                0.0,
                0.0,
                stages=stages or {},
                ts=ts,
            )
        )


def test_a_cut_resent_in_later_requests_counts_for_the_stage_that_made_it(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    _at(path, 1000.0, "s1", (1000, 600), {"trim_outputs": 300, "crush_json": 100})
    _at(path, 2000.0, "s1", (1400, 1000))  # the same cuts, resent: no stage row
    _at(path, 3000.0, "s2", (500, 500))
    _at(path, 3500.0, "s3", (800, 700), model="gpt-5")  # no stage row at all: not attributed
    with Ledger.open(path) as ledger:
        everything, later = summary(ledger), summary(ledger, since=1500.0)
    assert (
        everything["totals"]["tokens_saved"] == 900
        and sum(s["tokens"] for s in everything["stages"]) == 400
    )
    assert {s["stage"]: s["tokens"] for s in everything["saved_by_stage"]} == {
        "trim_outputs": 600,
        "crush_json": 200,
        "": 100,
    }
    assert {k["kind"]: k["tokens"] for k in everything["saved_by_kind"]} == {
        "tool output": 600,
        "JSON results": 200,
        "": 100,
    }
    assert (
        later["totals"]["requests"] == 3 and later["stages"] == []
    )  # the cuts were made before the range
    assert {s["stage"]: s["tokens"] for s in later["saved_by_stage"]} == {
        "trim_outputs": 300,
        "crush_json": 100,
        "": 100,
    }
    assert [(m["model"], m["requests"], m["tokens_saved"]) for m in everything["models"]] == [
        ("claude-sonnet-4-5", 3, 800),
        ("gpt-5", 1, 100),
    ]
    with Ledger.open(path) as ledger:
        window = summary(ledger, since=1500.0, until=3200.0)
    assert (window["totals"]["requests"], [d["requests"] for d in window["days"]]) == (2, [2])
    assert "per model" in render(everything)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from("xyz"),
            st.integers(0, 100),
            st.integers(0, 10**6),
            st.integers(0, 10**6),
            st.dictionaries(
                st.sampled_from(sorted(STAGE_KINDS)), st.integers(-500, 10**5), max_size=3
            ),
        ),
        max_size=10,
    ),
    st.one_of(st.none(), st.integers(0, 100)),
    st.one_of(st.none(), st.integers(0, 100)),
)
def test_the_savings_by_stage_and_kind_add_up_to_the_headline_in_any_time_range(
    tmp_path_factory, rows, since, until
):
    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite3"
    for session, ts, before, after, stages in rows:
        _at(path, float(ts), session, (before, after), stages)
    with Ledger.open(path) as ledger:
        data = summary(ledger, since=since, until=until)
    inside = [
        r for r in rows if (since is None or r[1] >= since) and (until is None or r[1] < until)
    ]
    assert data["totals"]["tokens_saved"] == sum(r[2] - r[3] for r in inside)
    assert sum(s["tokens"] for s in data["saved_by_stage"]) == data["totals"]["tokens_saved"]
    assert sum(k["tokens"] for k in data["saved_by_kind"]) == data["totals"]["tokens_saved"]


def _writer(path: str, n: int, name: str) -> None:
    for _ in range(n):
        record_request(face="test", session=name, project=Project(), model="gpt-5", vendor="openai",
                       tokens_before=10, tokens_after=5, stages={"trim_outputs": 5}, path=__import__("pathlib").Path(path))


def test_many_processes_write_without_losing_a_row(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), 25, f"p{i}")) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with Ledger.open(path) as ledger:
        data = summary(ledger)
    assert data["totals"]["requests"] == 100 and data["stages"] == [{"stage": "trim_outputs", "tokens": 500,
                                                                      "kind": STAGE_KINDS["trim_outputs"]}]


def test_the_file_is_private_in_wal_mode_and_survives_reopening(tmp_path):
    path = tmp_path / "store" / "ledger.sqlite3"
    _request(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    _request(path)
    with Ledger.open(path) as ledger:
        assert summary(ledger)["totals"]["requests"] == 2


def test_a_newer_schema_is_refused_and_a_write_fails_open(tmp_path, caplog):
    path = tmp_path / "ledger.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(LedgerError, match="newer ctxmill"):
        with Ledger.open(path):
            pass
    _request(path)  # logs, does not raise
    assert "not written" in caplog.text


def test_a_write_another_process_locked_out_is_tried_again(tmp_path, caplog, monkeypatch):
    """SQLite can refuse a write at once while another connection holds the lock (busy timeout
    or not): the write is tried again after a pause, and dropped with a warning only after
    `WRITE_ATTEMPTS`."""
    import ctxmill.ledger.store as store_module
    from ground.sqlitedb import WRITE_ATTEMPTS
    from tests.sqlite_locks import HeldLock

    path = tmp_path / "ledger.sqlite3"
    _request(path)
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 0)
    lock = HeldLock(path).hold(release_after=2)
    monkeypatch.setattr("time.sleep", lock.pause)
    _request(path)
    assert len(lock.pauses) == 2 and "not written" not in caplog.text
    with Ledger.open(path) as ledger:
        assert summary(ledger)["totals"]["requests"] == 2

    lock.hold()  # never released: logged, not raised
    _request(path)
    lock.release()
    assert len(lock.pauses) == WRITE_ATTEMPTS - 1 and "not written" in caplog.text
    with Ledger.open(path) as ledger:
        assert summary(ledger)["totals"]["requests"] == 2


def test_not_a_database_fails_open(tmp_path, caplog):
    path = tmp_path / "ledger.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    _request(path)
    assert "not written" in caplog.text


def test_no_secret_reaches_the_file(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    secret = "sk-ant-api03-" + "A" * 40
    folder = tmp_path / "secret-project-folder"
    record_request(face="proxy", session="k", project=project_of(folder), model="claude-haiku-4-5",
                   vendor="anthropic", tokens_before=5, tokens_after=3, path=path)
    data = b"".join(p.read_bytes() for p in tmp_path.glob("ledger.sqlite3*"))
    assert secret.encode() not in data and str(tmp_path).encode() not in data
    assert b"secret-project-folder" in data  # the name is kept, the path is not


def test_stats_command_prints_text_and_json(tmp_path):
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path)}
    empty = subprocess.run([sys.executable, "-m", "ctxmill", "stats"], capture_output=True, text=True, env=env)
    assert empty.returncode == 0 and "no requests yet" in empty.stdout
    _request(tmp_path / "ctxmill" / "ledger.sqlite3", "sess-1", (5000, 2000))
    text = subprocess.run([sys.executable, "-m", "ctxmill", "stats"], capture_output=True, text=True, env=env)
    assert "1 requests in 1 sessions" in text.stdout and "sess-1" in text.stdout
    out = subprocess.run([sys.executable, "-m", "ctxmill", "stats", "--json"], capture_output=True, text=True,
                         env=env)
    data = json.loads(out.stdout)
    assert data["totals"]["tokens_saved"] == 3000 and data["sessions"][0]["session"] == "sess-1"


def test_the_proxy_reads_the_working_directory_each_client_names():
    from ctxmill.proxy.identity import working_directory

    claude = b'{"system":[{"type":"text","text":"<env>\\nWorking directory: /home/a/shop\\nIs git repo: yes"}]}'
    codex = b'{"input":[{"role":"user","content":"<environment_context>\\n  <cwd>/srv/billing</cwd>\\n"}]}'
    assert working_directory(claude) == "/home/a/shop"
    assert working_directory(codex) == "/srv/billing"
    assert working_directory(b'{"messages":[{"role":"user","content":"hi"}]}') is None


def test_a_proxied_claude_code_2_1_332_request_has_its_project():
    """Claude Code 2.1.332 names its folder in a `role: system` message (`# Environment`)."""
    from ctxmill.proxy.identity import working_directory

    env = (
        "# Environment\nYou have been invoked in the following environment: \n"
        " - Primary working directory: "
        "/home/a/shop\n - Is a git repository: true\n - Platform: linux"
    )
    body = json.dumps(
        {
            "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332;"}],
            "messages": [{"role": "system", "content": env}, {"role": "user", "content": "hi"}],
        }
    )
    assert working_directory(body.encode()) == "/home/a/shop"
