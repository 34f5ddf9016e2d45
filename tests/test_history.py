"""The history store: ingest (incremental, idempotent, redacted, private), search by words, CJK and
regular expression with filters, get with neighbours, the size budget, the hooks and the CLI."""

from __future__ import annotations

import json
import stat

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memory.history.config import HistoryConfig
from memory.history.ingest import ingest_file
from memory.history.query import BadQuery, Filter, get, parse_time, search
from memory.history.store import HistoryStore
from tests.history.sessions import exchange, write_session

FACT = "The staging database listens on port 6543 behind the bastion host."
SECRET = "ghp_" + "Zq8" * 12


def cfg_for(tmp_path, **kw) -> HistoryConfig:
    return HistoryConfig(tmp_path / "data" / "history" / "history.sqlite3", **kw)


def test_a_fact_three_sessions_back_is_found_and_read_with_its_neighbours(tmp_path):
    cfg = cfg_for(tmp_path)
    sessions = [exchange([FACT, f"Use this token {SECRET} for the deploy"])] + [
        exchange([f"Unrelated work on the parser, step {i}"]) for i in range(3)]
    for n, items in enumerate(sessions):
        ingest_file(cfg, write_session(tmp_path / "s", f"s{n}", items), "/work/proj", updated=1000.0 + n)
    with HistoryStore.open(cfg) as store:
        hits = search(store, "which port does the staging database use").hits
        assert hits and hits[0].session == "s0" and "6543" in hits[0].snippet
        around = get(store, "s0", hits[0].seq, context=1)
    assert [r["seq"] for r in around] == [hits[0].seq - 1, hits[0].seq, hits[0].seq + 1][1 if hits[0].seq == 0 else 0:]
    assert any(FACT in r["text"] for r in around)


def test_no_secret_in_any_file_of_the_store_and_files_are_private(tmp_path):
    cfg = cfg_for(tmp_path)
    ingest_file(cfg, write_session(tmp_path / "s", "leaky", exchange([f"export GITHUB_TOKEN={SECRET}"],
                                                                      [f"curl -H 'Authorization: Bearer {SECRET}' x"])),
                "/p")
    files = [p for p in cfg.path.parent.iterdir()]
    assert cfg.path in files
    for path in files:
        assert SECRET.encode() not in path.read_bytes()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(cfg.path.parent.stat().st_mode) == 0o700
    with HistoryStore.open(cfg) as store:
        assert search(store, "GITHUB_TOKEN").hits[0].snippet.count("[REDACTED") >= 1


def test_reingest_adds_only_new_messages_and_is_idempotent(tmp_path):
    cfg = cfg_for(tmp_path)
    items = exchange(["first request about the cache"], ["make build"])
    path = write_session(tmp_path / "s", "grow", items)
    first = ingest_file(cfg, path, "/p")
    assert first.added == len(items) and ingest_file(cfg, path, "/p").added == 0  # unchanged file: not read again
    write_session(tmp_path / "s", "grow", items)  # the same messages, written again: compared, nothing added
    assert ingest_file(cfg, path, "/p").added == 0
    write_session(tmp_path / "s", "grow", items + exchange(["second request about the index"]))
    again = ingest_file(cfg, path, "/p")
    # the last message (a tool result) now also carries the new request: it and what follows are written again
    assert again.kept == first.added - 1 and again.added == 2
    fresh = cfg_for(tmp_path / "fresh")
    ingest_file(fresh, path, "/p")
    with HistoryStore.open(cfg) as store, HistoryStore.open(fresh) as other:
        rows = "SELECT seq, role, digest, text FROM messages ORDER BY seq"
        assert store.conn.execute(rows).fetchall() == other.conn.execute(rows).fetchall()
        assert search(store, "index").hits[0].seq == first.added - 1


@hsettings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(alphabet="abc xyz中文", min_size=1, max_size=12).filter(str.strip), min_size=1,
                      max_size=8), cut=st.integers(0, 8))
def test_ingesting_a_prefix_first_gives_the_same_store(tmp_path_factory, texts, cut):
    def dump(cfg):
        with HistoryStore.open(cfg) as store:
            return store.conn.execute("SELECT seq, role, text FROM messages ORDER BY seq").fetchall()

    items = exchange(texts)
    direct, stepwise = (cfg_for(tmp_path_factory.mktemp(n)) for n in ("direct", "stepwise"))
    folder = tmp_path_factory.mktemp("sessions")
    ingest_file(direct, write_session(folder, "k", items), "/p")
    if cut >= 2:  # a file of one user line is no recognisable session
        ingest_file(stepwise, write_session(folder, "k", items[:cut]), "/p")
    ingest_file(stepwise, write_session(folder, "k", items), "/p")
    assert dump(direct) == dump(stepwise)


def test_chinese_is_found_by_a_two_character_query(tmp_path):
    cfg = cfg_for(tmp_path)
    ingest_file(cfg, write_session(tmp_path / "s", "zh", exchange(["数据库迁移需要先备份生产环境"])), "/p")
    ingest_file(cfg, write_session(tmp_path / "s", "en", exchange(["nothing to see here"])), "/p")
    with HistoryStore.open(cfg) as store:
        hits = search(store, "备份").hits
    assert hits and {h.session for h in hits} == {"zh"}


def test_regex_search_filters_and_a_pathological_pattern_stops(tmp_path):
    cfg = cfg_for(tmp_path, regex_seconds=0.3)
    ingest_file(cfg, write_session(tmp_path / "s", "a", exchange(["error E0382 in borrow.rs"]), "/work/alpha"),
                "/x", updated=1_000.0)
    ingest_file(cfg, write_session(tmp_path / "s", "b", exchange(["error E0502 in lib.rs", "a" * 5000 + "!"]),
                                   "/work/beta"), "/x", updated=2_000.0)
    with HistoryStore.open(cfg) as store:
        assert [h.session for h in search(store, r"E0\d{3}", regex=True).hits] == ["b", "a"]  # newest first
        assert [h.session for h in search(store, r"E0\d{3}", Filter(project="alpha"), regex=True).hits] == ["a"]
        assert [h.session for h in search(store, "error", Filter(since=1_500.0)).hits] == ["b"]
        assert [h.session for h in search(store, "error", Filter(session="a")).hits] == ["a"]
        slow = search(store, r"(a|aa)+$", regex=True)
        assert slow.stopped and "stopped" in slow.stopped
        with pytest.raises(BadQuery):
            search(store, "(unclosed", regex=True)
        with pytest.raises(BadQuery):
            get(store, "nope", "1")


def test_parse_time():
    assert parse_time("2d", now=10 * 86400) == 8 * 86400
    assert parse_time("2026-01-02") == parse_time("2026-01-02T00:00:00Z")
    with pytest.raises(BadQuery):
        parse_time("yesterday")


def test_the_store_stays_within_its_budget_evicting_the_oldest(tmp_path):
    cfg = cfg_for(tmp_path, max_bytes=400_000)
    for n in range(30):
        words = " ".join(f"w{n}x{i}" for i in range(1500))
        ingest_file(cfg, write_session(tmp_path / "s", f"s{n:02d}", exchange([words])), "/p", updated=float(n))
    with HistoryStore.open(cfg) as store:
        kept = [s.key for s in store.sessions(limit=100)]
        assert store.size() <= cfg.max_bytes
    assert kept and "s29" in kept and "s00" not in kept
    assert kept == sorted(kept, reverse=True) and len(kept) < 30  # the newest kept, contiguous


def test_session_end_hook_keeps_the_transcript_unless_history_is_off(tmp_path, monkeypatch):
    from ctxmill.hooks import handle
    from ctxmill.settings import Settings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    project = tmp_path / "proj"
    (project / ".ctxmill").mkdir(parents=True)
    monkeypatch.setenv("CTXMILL_HOME", str(project / ".ctxmill"))
    transcript = write_session(tmp_path / "t", "live-1", exchange([FACT]), str(project))
    event = {"session_id": "live-1", "transcript_path": str(transcript), "cwd": str(project)}
    handle("SessionEnd", event)
    with HistoryStore.open(Settings.load().history) as store:
        assert search(store, "bastion").hits[0].session == "live-1"
    (project / ".ctxmill" / "config.toml").write_text("[history]\nenabled = false\n")
    write_session(tmp_path / "t", "live-2", exchange(["another session"]), str(project))
    handle("PreCompact", {**event, "session_id": "live-2", "transcript_path": str(tmp_path / "t" / "live-2.jsonl")})
    with HistoryStore.open(Settings.load().history) as store:
        assert [s.key for s in store.sessions()] == ["live-1"]


def test_config_errors_name_the_key(tmp_path, monkeypatch):
    from ctxmill.errors import ConfigError
    from ctxmill.settings import Settings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "ctxmill").mkdir(parents=True)
    mine = tmp_path / "xdg" / "ctxmill" / "config.toml"  # the budget is the user's setting
    mine.write_text("[history]\nmax_mb = 0\n")
    with pytest.raises(ConfigError, match="history.max_mb"):
        Settings.load(tmp_path).history
    mine.write_text("")
    (tmp_path / "config.toml").write_text("[history]\nmax_mb = 2\nkeep = 1\n")
    with pytest.raises(ConfigError, match="history.keep"):
        Settings.load(tmp_path).history


def test_cli_import_search_get_list(tmp_path, monkeypatch, capsys):
    from ctxmill.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CTXMILL_HOME", str(tmp_path / ".ctxmill"))
    folder = tmp_path / "sessions"
    write_session(folder, "one", exchange([FACT]))
    (folder / "junk.jsonl").write_text("not a session\n")
    assert main(["import", str(folder)]) == 1  # one file is no session: said, the other imported
    assert "junk.jsonl" in capsys.readouterr().err
    assert main(["history", "import", str(folder / "one.jsonl")]) == 0
    assert "0 new messages" in capsys.readouterr().out
    assert main(["history", "search", "bastion", "--json"]) == 0
    hit = json.loads(capsys.readouterr().out)["hits"][0]
    assert main(["history", "get", "on", str(hit["seq"]), "--context", "0"]) == 0
    assert FACT in capsys.readouterr().out
    assert main(["history", "search", "(", "--regex"]) == 2
    assert "bad regular expression" in capsys.readouterr().err
    assert main(["history", "list"]) == 0 and "one" in capsys.readouterr().out
    from ctxmill.settings import Settings

    Settings.load().history.path.write_bytes(b"not a database" * 100)  # the store, not a file, is bad
    assert main(["import", str(folder / "one.jsonl")]) == 2
    assert capsys.readouterr().err.strip().endswith("file is not a database")


def test_corpus_sessions_stay_within_a_small_budget(corpus, tmp_path):
    """Real recordings of three formats (Chinese among them) fed into a 1 MB store: never over it
    after an ingest, a session larger than the whole store refused, and the newest of the others
    are the ones kept (the whole corpus: bench/history_corpus.py)."""
    from compress.formats.sessions import session_files
    from memory.history.store import SessionTooLarge

    cfg = cfg_for(tmp_path, max_bytes=2**20)
    files = [f for name in ("craft-zh", "claude-flat", "swe-agent")
             for f in session_files(corpus / "transcripts" / name)]
    refused = []
    for n, path in enumerate(files):
        try:
            ingest_file(cfg, path, "/corpus", updated=float(n))
        except SessionTooLarge:  # one session over the whole budget is refused, nothing evicted
            refused.append(n)
        with HistoryStore.open(cfg) as store:
            assert store.size() <= cfg.max_bytes, path
    with HistoryStore.open(cfg) as store:
        kept = store.sessions(limit=1000)
    newest = max(n for n in range(len(files)) if n not in refused)
    assert refused and kept and kept[0].updated == float(newest) and len(kept) < len(files) - len(refused)


def test_the_documented_table_loads(tmp_path, monkeypatch):
    from pathlib import Path

    from ctxmill.settings import Settings

    page = (Path(__file__).resolve().parents[1] / "docs" / "history.md").read_text()
    project, user = [block.split("```")[0] for block in page.split("```toml\n")[1:3]]
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "config.toml").write_text(project)
    (tmp_path / "xdg" / "ctxmill").mkdir(parents=True)
    (tmp_path / "xdg" / "ctxmill" / "config.toml").write_text(user.replace("256", "64").replace("= 2 ", "= 3 "))
    cfg = Settings.load(tmp_path).history
    assert (cfg.enabled, cfg.max_bytes, cfg.regex_seconds) == (False, 64 * 2**20, 3.0)


def test_a_project_cannot_shrink_the_shared_store_or_loosen_its_redaction(tmp_path, monkeypatch):
    from ctxmill.settings import Settings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "config.toml").write_text('[history]\nmax_mb = 0.001\nregex_seconds = 999\n'
                                          '[security]\nredact_allow = ["ghp_[A-Za-z0-9]{36}"]\nredact_extra = ["T-[0-9]+"]\n')
    cfg = Settings.load(tmp_path).history
    assert (cfg.max_bytes, cfg.regex_seconds, cfg.redact_allow) == (256 * 2**20, 2.0, ())
    assert cfg.redact_extra == ("T-[0-9]+",)  # stricter is allowed


def test_many_processes_import_at_once_and_lose_nothing(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CTXMILL_HOME", str(tmp_path / ".ctxmill"))
    env = dict(os.environ)
    paths = [write_session(tmp_path / "s", f"p{n}", exchange([f"parallel fact number {n} " + "pad " * 2000] * 3,
                                                            ["make test"])) for n in range(4)]
    jobs = [subprocess.Popen([sys.executable, "-m", "ctxmill", "import", str(p)], env=env, cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for p in paths + paths[:2]]
    results = [(job.wait(timeout=120), job.stderr.read()) for job in jobs]
    assert all(code == 0 for code, _ in results), results
    from ctxmill.settings import Settings

    with HistoryStore.open(Settings.load().history) as store:
        assert sorted(s.key for s in store.sessions()) == ["p0", "p1", "p2", "p3"]
        for n in range(4):
            assert {h.session for h in search(store, f'"number {n}"', Filter(session=f"p{n}")).hits} == {f"p{n}"}
        counts = store.conn.execute("SELECT count(*), count(DISTINCT session || ':' || seq) FROM messages").fetchone()
    from compress.formats.sessions import read_session
    from memory.history.messages import rows_of

    assert counts[0] == counts[1] == sum(len(rows_of(read_session(p))) for p in paths)  # each once, none lost


def test_an_import_another_process_locked_out_is_tried_again(tmp_path, monkeypatch):
    """A store another connection keeps locked refuses the import at once (no busy timeout
    here): the import is run again after a pause and stores the session once the lock is gone;
    a lock never released is an error naming the store after `WRITE_ATTEMPTS` runs."""
    import memory.history.store as store_module
    from ground.sqlitedb import WRITE_ATTEMPTS
    from memory.history.store import HistoryError
    from tests.sqlite_locks import HeldLock

    cfg = cfg_for(tmp_path)
    ingest_file(cfg, write_session(tmp_path / "s", "first", exchange(["an early session"])), "/p")
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 0)
    lock = HeldLock(cfg.path).hold(release_after=2)
    monkeypatch.setattr("time.sleep", lock.pause)
    assert ingest_file(cfg, write_session(tmp_path / "s", "second", exchange([FACT])), "/p").added > 0
    assert len(lock.pauses) == 2
    with HistoryStore.open(cfg) as store:
        assert search(store, "bastion").hits[0].session == "second"

    lock.hold()  # never released
    with pytest.raises(HistoryError, match="locked") as raised:
        ingest_file(cfg, write_session(tmp_path / "s", "third", exchange(["never stored"])), "/p")
    lock.release()
    assert raised.value.busy and len(lock.pauses) == WRITE_ATTEMPTS - 1
    with HistoryStore.open(cfg) as store:
        assert sorted(s.key for s in store.sessions()) == ["first", "second"]


def test_doctor_reports_the_store_against_its_budget(tmp_path, monkeypatch):
    from ctxmill.commands.doctor import _history

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CTXMILL_HOME", str(tmp_path / ".ctxmill"))
    (tmp_path / ".ctxmill").mkdir()
    line, problem = _history()
    assert line.startswith("history: 0 sessions, ") and " of 256 MB" in line and problem is None
    (tmp_path / "xdg" / "ctxmill" / "config.toml").write_text("[history]\nmax_mb = 0.001\n")
    line, problem = _history()
    assert " of 0 MB" in line and "over its budget" in problem  # an empty database is already 1 KB over
    (tmp_path / ".ctxmill" / "config.toml").write_text("[history]\nenabled = false\n")
    assert _history() == ("history: turned off ([history] enabled = false)", None)


def test_an_imported_session_is_dated_by_its_own_last_message_not_the_files_time(tmp_path):
    cfg = cfg_for(tmp_path)
    path = write_session(tmp_path / "s", "old", exchange(["the invoice rounding bug", "fixed it"]))
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for i, item in enumerate(lines):
        item["timestamp"] = f"2025-01-02T10:{i:02d}:00.000Z"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))  # the file itself is written now
    ingest_file(cfg, path, "/work/proj")
    with HistoryStore.open(cfg) as store:
        updated = store.sessions()[0].updated
    assert abs(updated - parse_time("2025-01-02T10:03:00Z")) < 60


def test_the_worktrees_of_one_repository_are_one_project(tmp_path):
    main = tmp_path / "app"
    (main / ".git" / "worktrees" / "feat").mkdir(parents=True)
    tree = tmp_path / "app-feat"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {main}/.git/worktrees/feat\n")
    cfg = cfg_for(tmp_path)
    ingest_file(cfg, write_session(tmp_path / "s", "a", exchange(["work in main"]), cwd=str(main)), str(main))
    ingest_file(cfg, write_session(tmp_path / "s", "b", exchange(["work in feature"]), cwd=str(tree)), str(tree))
    with HistoryStore.open(cfg) as store:
        assert {s.project for s in store.sessions()} == {str(main)}
        assert {s.key for s in store.sessions(str(tree))} == {"a", "b"}
