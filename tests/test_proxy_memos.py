"""What a proxy worker keeps for the sessions it ran follows the sessions it still holds: when a
session leaves (the idle rule, the LRU bounds), the entries of the pipeline's memos only it used
leave with it (`compress.stagekit.memo.release`), so sessions that come and go leave nothing
behind; and what the memos keep never changes a request's bytes."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import orjson
import pytest

from compress.stagekit import output_cut, stage
from compress.stagekit.memo import TextMemo
from ctxmill.proxy import worker
from tests.proxy_fixtures import SMALL
from tests.stagekit import anthropic

IDLE = 30.0
KEYS = [f"{n:032x}" for n in range(1, 4)]


def _request(session: int, calls: int) -> bytes:
    """Session `session`'s conversation after `calls` commands, each with a build log of its own
    (its own lines, a secret): outputs the pipeline trims and redacts, shared with no other session."""
    def log(n: int) -> str:
        lines = (f"session {session} step {i} ok 构建" if i % 37 else f"step {i} ERROR: disk full" for i in range(400))
        return "\n".join(lines) + f"\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY{session:04d}{n:04d}"

    return orjson.dumps(anthropic([("Bash", {"command": f"make {n}"}, log(n)) for n in range(calls)], turns_after=2))


@pytest.fixture
def memos(monkeypatch) -> tuple[TextMemo, TextMemo]:
    """Fresh, unbounded memos in place of the pipeline's (so only this test's runs are in them)."""
    fresh = TextMemo(max_bytes=2**30, max_value_bytes=2**30), TextMemo(max_bytes=2**30, max_value_bytes=2**30)
    monkeypatch.setattr(output_cut, "TRIMMED", fresh[0])
    monkeypatch.setattr(stage, "REDACTED", fresh[1])
    return fresh


def _keys(memos: tuple[TextMemo, ...]) -> list[set]:
    return [set(m._values) for m in memos]


def _run(w: worker.Worker, session: int, calls: int, persist: bool = True) -> bytes | None:
    data = w.compress(KEYS[session], _request(session, calls), persist=persist).data
    w.finish()
    return data


def _clocked(root: Path, **setup):
    clock = [0.0]
    fake_time = SimpleNamespace(**{**vars(time), "monotonic": lambda: clock[0]})
    options = {"max_sessions": 8, "idle_seconds": IDLE, **setup}
    return clock, mock.patch.object(worker, "time", fake_time), \
        lambda: worker.Worker(worker.WorkerSetup(root / "sessions", root / "ccr", SMALL, None, **options))


def test_sessions_that_left_by_the_idle_rule_leave_no_memo_entries(tmp_path, memos):
    """Sessions 0 and 1 run, go quiet past the idle time while session 2 runs on: the memos then
    hold exactly the entries a worker that only ever ran session 2 holds (and 0's and 1's were there)."""
    clock, patched, new_worker = _clocked(tmp_path / "churn")
    with patched:
        w = new_worker()
        try:
            for calls in (3, 5, 7):
                for session in (0, 1, 2):
                    _run(w, session, calls)
            assert all(m.users() == 3 for m in memos) and any(m._values for m in memos)
            clock[0] += 2 * IDLE
            _run(w, 2, 9)
            assert set(w.states) == {KEYS[2]}
            churned = _keys(memos)
        finally:
            w.store.close()
    for m in memos:
        m.clear()
    _, patched, new_worker = _clocked(tmp_path / "alone")
    with patched:
        w = new_worker()
        try:
            for calls in (3, 5, 7, 9):
                _run(w, 2, calls)
        finally:
            w.store.close()
    assert churned == _keys(memos)
    assert all(m.users() <= 1 for m in memos)


def test_a_session_pushed_out_by_the_bound_takes_its_memo_entries_along(tmp_path, memos):
    """With room for one session, each new one pushes the last out: the memos hold only the
    entries of the one kept."""
    _, patched, new_worker = _clocked(tmp_path, max_sessions=1)
    with patched:
        w = new_worker()
        try:
            for session in range(3):
                _run(w, session, 7)
                assert set(w.states) == {KEYS[session]}
                users = [set().union(*m._users.values()) if m._users else set() for m in memos]
                assert all(u <= {KEYS[session]} for u in users) and any(users)
        finally:
            w.store.close()


def test_a_memory_only_session_keeps_its_memo_entries_while_it_is_held(tmp_path, memos):
    """It never leaves by the idle rule, and so neither do the entries it uses."""
    clock, patched, new_worker = _clocked(tmp_path)
    with patched:
        w = new_worker()
        try:
            _run(w, 0, 7, persist=False)
            held = _keys(memos)
            assert any(held)
            clock[0] += 2 * IDLE
            _run(w, 1, 3)
            assert KEYS[0] in w.states and all(h <= k for h, k in zip(held, _keys(memos)))
        finally:
            w.store.close()
