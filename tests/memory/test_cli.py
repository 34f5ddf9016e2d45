"""`ctxmill memory ...` end to end, as a subprocess in a throwaway project."""

import json
import os
import subprocess
import sys

import pytest
from memory_helpers import REPO


@pytest.fixture
def run(tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("CTXMILL_HOME", None)

    def ctxmill(*args):
        return subprocess.run([sys.executable, "-m", "ctxmill", "memory", *args], cwd=project, env=env, capture_output=True, text=True)

    ctxmill.project = project
    return ctxmill


def test_store_search_list_forget(run):
    stored = run("store", "--type", "decision", "Use filelock for atomic MEMORY.md writes", "--tags", "io,locks", "--pin")
    assert stored.returncode == 0, stored.stderr
    entry_id = stored.stdout.strip()
    assert (run.project / ".ctxmill" / "MEMORY.md").read_text().count(entry_id) == 1
    found = run("search", "atomic writes", "--json")
    hits = json.loads(found.stdout)
    assert hits[0]["id"] == entry_id and hits[0]["section"] == "Decisions" and hits[0]["pinned"]
    assert set(hits[0]) >= {"file", "snippet", "score", "tags"}
    assert entry_id in run("list").stdout
    assert run("forget", entry_id).returncode == 0
    assert json.loads(run("search", "atomic writes", "--json").stdout) == []


def test_global_store_and_chinese_search(run):
    assert run("store", "--type", "fact", "--global", "部署脚本在服务器上运行").returncode == 0
    out = run("search", "部署", "--json")
    assert json.loads(out.stdout)[0]["scope"] == "global"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["store", "--type", "decision", "  "], "empty text"),
        (["store", "--type", "wish", "text"], "unknown type"),
        (["forget", "m-deadbeef"], "no memory entry"),
        (["search", "x", "--limit", "0"], "limit"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(run, args, message):
    out = run(*args)
    assert out.returncode == 2
    assert message in out.stderr and out.stderr.count("\n") == 1


def test_corrupt_index_reports_once_then_is_rebuilt(run):
    run("store", "--type", "note", "index corruption test entry")
    index_file = run.project / ".ctxmill" / ".index" / "index.bin"
    run("search", "corruption")
    index_file.write_bytes(b"not an index at all")
    first = run("search", "corruption")
    assert first.returncode == 1 and "corrupt" in first.stderr and first.stderr.count("\n") == 1
    assert "index corruption test entry" in first.stdout
    second = run("search", "corruption")
    assert second.returncode == 0 and second.stderr == ""
    assert run("reindex").stdout.strip() == "indexed 1 entries"


def test_a_search_imports_neither_regex_nor_logging(run, tmp_path):
    """What keeps a cold `ctxmill memory search` fast (bench/memory_speed.py measures it): English
    and Chinese queries use the stdlib tokenizer patterns, the command sets up no log file, and a
    Chinese word of two characters needs no jieba (its words of 3+ characters are the index's)."""
    run("store", "--type", "fact", "The staging database is read-only; 数据库连接池的大小是20")
    run("search", "staging")  # builds the index
    code = ("import sys; from ctxmill.cli import main; main(['memory', 'search', sys.argv[1]]); "
            "print('imported:', *[m for m in ('regex', 'logging', 'typing') if m in sys.modules])")
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("CTXMILL_HOME", None)
    for query in ("staging database", "连接"):
        out = subprocess.run([sys.executable, "-c", code, query], cwd=run.project, env=env, capture_output=True, text=True)
        assert out.returncode == 0 and "staging" in out.stdout, out.stderr
        assert out.stdout.splitlines()[-1] == "imported:"
