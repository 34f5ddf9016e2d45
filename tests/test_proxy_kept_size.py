"""What a worker counts of each session it keeps (`SessionState.size`): the last request's bytes
and the compressed body kept for the session's next run (`ctxmill.proxy.reuse`), so the bound on
the sessions kept (`WorkerSetup.max_kept_bytes`, the proxy's `--max-inflight-mb`) and the trims
after released bytes count what is really kept; eviction never changes a request's bytes."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmill.proxy import worker
from ctxmill.proxy.session_state import SessionState
from tests.proxy_fixtures import SMALL
from tests.test_proxy_idle import KEYS, _request


def _worker(root: Path, max_kept_bytes: int = 2**30) -> worker.Worker:
    return worker.Worker(worker.WorkerSetup(root / "sessions", root / "ccr", SMALL, None, max_sessions=8,
                                            max_kept_bytes=max_kept_bytes))


def _run(w: worker.Worker, key: str, raw: bytes) -> bytes | None:
    data = w.compress(key, raw).data
    w.finish()
    return data


def test_a_kept_sessions_size_counts_its_request_and_its_kept_output(tmp_path):
    """After each run: the request's bytes plus the compressed body the session keeps for its next
    run (the last one rendered: a run that sends the request as is keeps the one before)."""
    w = _worker(tmp_path)
    try:
        last_output = b""
        for messages in (3, 7, 7, 9):
            raw = _request(0, messages)
            data = _run(w, KEYS[0], raw)
            last_output = data if data is not None else last_output
            assert w.states[KEYS[0]].size == len(raw) + len(last_output)
        assert last_output  # the runs compressed: a body of their own was kept
    finally:
        w.store.close()


def test_kept_outputs_push_the_sessions_over_the_bound_and_the_oldest_leaves(tmp_path):
    """Two sessions whose requests fit the bound, but not with their compressed bodies: after the
    second's run the first leaves memory, and its next run renders the same bytes."""
    requests = {key: _request(n, 7) for n, key in enumerate(KEYS[:2])}
    free = _worker(tmp_path / "free")
    try:
        outputs = {key: _run(free, key, raw) for key, raw in requests.items()}
        assert all(outputs.values())
        again = _run(free, KEYS[0], _request(0, 9))
    finally:
        free.store.close()
    kept = sum(len(raw) for raw in requests.values())
    bound = kept + min(len(o) for o in outputs.values() if o is not None) // 2
    w = _worker(tmp_path / "bounded", bound)
    try:
        assert [_run(w, key, raw) for key, raw in requests.items()] == list(outputs.values())
        assert list(w.states) == [KEYS[1]]
        assert _run(w, KEYS[0], _request(0, 9)) == again
    finally:
        w.store.close()


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(0, len(KEYS) - 1), min_size=2, max_size=8), st.integers(20_000, 120_000))
def test_the_kept_bytes_stay_within_the_bound_and_count_request_and_output(turns, bound):
    """Each turn: its session sends its next request to a bounded worker and to one that keeps
    everything. After each run the sessions kept add up to at most the bound (or only the latest
    is left), each one's size is its last request's plus the last compressed body it keeps, and
    the bytes are those of the worker that kept everything."""
    with tempfile.TemporaryDirectory() as folder:
        bounded, free = _worker(Path(folder) / "bounded", bound), _worker(Path(folder) / "free")
        sent = [0] * len(KEYS)
        kept: dict[str, tuple[SessionState, bytes, bytes | None]] = {}  # state, last request, kept output
        try:
            for session in turns:
                sent[session] += 1
                key, raw = KEYS[session], _request(session, 1 + 2 * sent[session])
                data = _run(bounded, key, raw)
                assert data == _run(free, key, raw)
                state = bounded.states[key]
                before = kept.get(key)
                output = data if data is not None or before is None or before[0] is not state else before[2]
                kept[key] = (state, raw, output)
                assert len(bounded.states) == 1 or sum(s.size for s in bounded.states.values()) <= bound
                for k, s in bounded.states.items():
                    assert kept[k][0] is s and s.size == len(kept[k][1]) + len(kept[k][2] or b"")
        finally:
            bounded.store.close()
            free.store.close()
