"""Importing a long session into history: one session never evicts more than itself, one larger
than the store's whole budget is refused with nothing written or evicted, and a long file is
read piece by piece. The red team's 248 MB transcript evicted both sessions of the store, itself
included ("0 kept"), after 132 s and 1 GB of memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from compress.formats.sessions import read_session, read_session_pieces
from memory.history.config import HistoryConfig
from memory.history.ingest import ingest_file
from memory.history.messages import rows_of
from memory.history.store import HistoryStore, SessionTooLarge
from tests.conftest import REPO
from tests.history.sessions import exchange, write_session


def cfg_for(tmp_path, **kw) -> HistoryConfig:
    return HistoryConfig(tmp_path / "data" / "history" / "history.sqlite3", **kw)


def _words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def _keys(cfg) -> list[str]:
    with HistoryStore.open(cfg) as store:
        return [s.key for s in store.sessions(limit=1000)]


def test_a_session_larger_than_the_whole_budget_is_refused_and_nothing_is_evicted(tmp_path):
    cfg = cfg_for(tmp_path, max_bytes=300_000)
    for n in range(2):
        ingest_file(
            cfg,
            write_session(tmp_path / "s", f"small{n}", exchange([f"session {n} fixed the parser"])),
            "/p",
            updated=100.0 + n,
        )
    big = write_session(
        tmp_path / "s", "big", exchange([_words(3000, f"b{k}x") for k in range(40)])
    )
    with pytest.raises(
        SessionTooLarge, match=r"more than its whole budget of 0 MB.*\[history\] max_mb"
    ):
        ingest_file(cfg, big, "/p", updated=1.0)  # recorded before the others: the oldest
    assert _keys(cfg) == ["small1", "small0"]


def test_a_session_whose_text_fits_but_whose_rows_do_not_is_refused_and_rolled_back(tmp_path):
    """Thousands of tiny messages: their text is a sixth of the budget, what they take on disk is
    more than all of it. Measured before the transaction commits, the session is refused and the
    store keeps its sessions, within its budget."""
    cfg = cfg_for(tmp_path, max_bytes=2_500_000)
    small = write_session(tmp_path / "s", "small", exchange(["the parser is fixed"]))
    ingest_file(cfg, small, "/p")
    tiny = write_session(tmp_path / "s", "tiny", exchange([f"ok {i}" for i in range(16_000)]))
    with pytest.raises(SessionTooLarge):
        ingest_file(cfg, tiny, "/p")
    assert _keys(cfg) == ["small"]
    with HistoryStore.open(cfg) as store:
        assert store.size() <= cfg.max_bytes


def test_one_session_never_evicts_more_than_itself(tmp_path):
    """A store near its budget takes a session three times as large as the others, recorded
    before all of them: it is kept (never evicted by its own ingest), and what goes to make room
    is about its size, oldest first, the store within budget."""
    cfg = cfg_for(tmp_path, max_bytes=500_000)
    n = 0
    while True:
        ingest_file(
            cfg,
            write_session(tmp_path / "s", f"s{n:02d}", exchange([_words(1500, f"w{n}x")])),
            "/p",
            updated=100.0 + n,
        )
        n += 1
        with HistoryStore.open(cfg) as store:
            if store.size() > 0.7 * cfg.max_bytes or n == 60:
                break
    before = _keys(cfg)
    done = ingest_file(
        cfg,
        write_session(tmp_path / "s", "large", exchange([_words(4500, "L")])),
        "/p",
        updated=1.0,
    )
    after = _keys(cfg)
    gone = [k for k in before if k not in after]
    assert "large" in after and done.evicted == len(gone)
    assert (
        1 <= len(gone) <= 4 and gone == sorted(before)[: len(gone)]
    )  # its size (3) or one more, oldest first
    with HistoryStore.open(cfg) as store:
        assert store.size() <= cfg.max_bytes


def test_the_cli_says_which_session_is_too_large_and_imports_the_others(tmp_path):
    data, project = tmp_path / "data", tmp_path / "proj"
    (data / "ctxmill").mkdir(parents=True)
    (data / "ctxmill" / "config.toml").write_text("[history]\nmax_mb = 0.3\n")
    (project / ".git").mkdir(parents=True)
    small = write_session(tmp_path / "s", "small", exchange(["the parser is fixed"]))
    big = write_session(
        tmp_path / "s", "big", exchange([_words(3000, f"b{k}x") for k in range(40)])
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(data)}
    env.pop("CTXMILL_HOME", None)
    done = subprocess.run(
        [sys.executable, "-m", "ctxmill", "import", str(big), str(small)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert (
        done.stderr.count("\n") == 1
        and "big.jsonl" in done.stderr
        and "[history] max_mb" in done.stderr
    )
    assert "small.jsonl: 2 new messages" in done.stdout and "kept)" not in done.stdout


def _long_session(tmp_path, turns: int) -> tuple:
    items = []
    for t in range(turns):
        items += [
            ("user", f"step {t}: fix module {t}"),
            (
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "id": f"t{t}",
                        "name": "Bash",
                        "input": {"command": f"make {t}"},
                    }
                ],
            ),
            (
                "user",
                [{"type": "tool_result", "tool_use_id": f"t{t}", "content": _words(300, f"o{t}x")}],
            ),
            ("assistant", [{"type": "text", "text": f"fixed {t}"}]),
        ]
    return write_session(tmp_path / "s", "long", items)


def test_a_long_session_read_in_pieces_is_the_session(tmp_path):
    """Pieces cut only before a person's prompt: one after the other they hold the session's
    messages and give its history rows; a file within one piece is read as before."""
    path = _long_session(tmp_path, 40)
    whole = read_session(path)
    pieces = list(read_session_pieces(path, piece_bytes=20_000))
    assert len(pieces) > 5
    assert [m for p in pieces for m in p.messages] == whole.messages
    assert [r for p in pieces for r in rows_of(p)] == rows_of(whole)
    (alone,) = read_session_pieces(path, piece_bytes=path.stat().st_size)
    assert alone.messages == whole.messages and alone.calls == whole.calls


def test_a_codex_rollout_is_cut_before_a_persons_message(tmp_path):
    lines = [{"type": "session_meta", "payload": {"id": "c1", "cwd": "/p"}}]
    for t in range(30):
        lines += [
            {
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"step {t}"}],
                },
            },
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": f"c{t}",
                    "arguments": json.dumps({"command": ["make", str(t)]}),
                },
            },
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call_output",
                    "call_id": f"c{t}",
                    "output": _words(200, f"o{t}x"),
                },
            },
            {
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": f"done {t}"}],
                },
            },
        ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    pieces = list(read_session_pieces(path, piece_bytes=10_000))
    assert len(pieces) > 3 and all(p.messages[0]["role"] == "user" for p in pieces[1:])
    assert [r for p in pieces for r in rows_of(p)] == rows_of(read_session(path))


def test_the_rows_reach_the_store_as_they_are_made(tmp_path):
    """`ingest` reads its rows once, as an iterator: it never needs them all at once."""
    path = _long_session(tmp_path, 10)
    rows = rows_of(read_session(path))
    made = []

    def one_at_a_time():
        for row in rows:
            made.append(row)
            yield row

    with HistoryStore.open(cfg_for(tmp_path)) as store:
        done = store.ingest("k", one_at_a_time(), project="/p", source=str(path), fmt="claude-code")
        assert done.added == len(rows) == len(made)
        assert [t for (t,) in store.conn.execute("SELECT text FROM messages ORDER BY seq")] == [
            r.text for r in rows
        ]
        again = store.ingest("k", iter(rows), project="/p", source=str(path), fmt="claude-code")
    assert (again.added, again.kept) == (0, len(rows))
