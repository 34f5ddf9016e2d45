"""The pipeline on real requests: one ~200K-token request (pytest-benchmark), and a live session.

    python -m pytest bench/bench_pipeline_corpus.py --benchmark-only
    python bench/bench_pipeline_corpus.py [--session NAME] [--repeat 3]

The pytest-benchmark request is the longest prefix of the corpus' claude-flat session under
200K tokens (the generated request of bench/bench_pipeline.py when the corpus is absent): full
(epoch) and incremental runs, each with the floor beside it (`test_floor`: the request's orjson
dumps + loads, what any proxy pays to read and write a body).

The script replays a recorded session request by request through one session, as a live
client would (default: the 296-request Claude Code session Strawhat404 TASK-64, up to 324K
tokens), with the recorded request times and without (a person who never pauses), and prints
per run: the pipeline's time per request on the request path (p50, p99, max) and after the
answer (`compress.state.session.Session.settle`: epoch trials), each also as a ratio to the floor's p50 and
p99 over the same bodies, so the figures read the same on any machine. CPU time of the process
(a shared machine's waits are not the pipeline's); the best of `--repeat` runs per request.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ccr.store import CCRStore
from compress.runner.pipeline import run
from compress.state.session import Session
from compress.token_counters import estimate_tokens

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
TARGET = 200_000


def _corpus_request() -> dict | None:
    from compress.formats.sessions import read_session

    path = CORPUS / "transcripts" / "claude-flat"
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else []
    if not files:
        return None
    t = read_session(files[0])
    best = None
    total = 0
    for call in t.calls:
        total = sum(estimate_tokens(json.dumps(m)) for m in t.messages[: call.index])
        if total > TARGET:
            break
        best = call.index
    return {**t.head, "messages": t.messages[:best]} if best else None


def _generated_request() -> dict:
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_pipeline import _request

    return _request(TARGET)


@pytest.fixture(scope="module")
def request_200k() -> dict:
    return _corpus_request() or _generated_request()


def test_full_run(benchmark, request_200k):
    def full():
        return run(request_200k, session=Session.memory(), store=CCRStore.in_memory())

    result = benchmark(full)
    assert result.report.mode == "epoch" and not result.report.error


def test_incremental_run(benchmark, request_200k):
    messages = request_200k["messages"]
    cut = max(i for i, m in enumerate(messages[:-1]) if m.get("role") == "assistant")
    earlier = {**request_200k, "messages": messages[:cut]}

    def setup():
        session, store = Session.memory(), CCRStore.in_memory()
        run(earlier, session=session, store=store)
        return (request_200k,), {"session": session, "store": store}

    result = benchmark.pedantic(run, setup=setup, rounds=5)
    assert not result.report.error


def test_floor(benchmark, request_200k):
    import orjson

    benchmark(lambda: orjson.loads(orjson.dumps(request_200k)))


LIVE_SESSION = "claude-code/Strawhat404__TASK-64__develop-1.jsonl"


def live(name: str = LIVE_SESSION, recorded_times: bool = True) -> list[dict]:
    """Each request of session `name` through one session and one CCR store: CPU ms on the
    request path (`run`), after the answer (`settle`), of the floor, and the run's mode."""
    import time

    import orjson

    from compress.formats.sessions import read_session

    transcript = read_session(CORPUS / "transcripts" / name)
    rows = []
    for history in transcript.segments():
        session, store = Session.memory(), CCRStore.in_memory()
        for call in (c for c in history.calls if c.index > 0):
            body = history.whole(call.index)
            t0 = time.process_time()
            result = run(body, session=session, store=store, now=call.at if recorded_times else None)
            t1 = time.process_time()
            session.settle()
            t2 = time.process_time()
            orjson.loads(orjson.dumps(body))
            t3 = time.process_time()
            rows.append({"run": (t1 - t0) * 1000, "after": (t2 - t1) * 1000, "floor": (t3 - t2) * 1000,
                         "mode": result.report.mode})
    return rows


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--session", default=LIVE_SESSION)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.session}: CPU ms per request, best of {args.repeat} (× floor p50 / × floor p99)")
    for recorded in (True, False):
        runs = [live(args.session, recorded) for _ in range(args.repeat)]
        rows = [{k: (min(r[i][k] for r in runs) if k != "mode" else runs[0][i][k]) for k in runs[0][i]}
                for i in range(len(runs[0]))]
        floor50, floor99 = _quantile([r["floor"] for r in rows], .5), _quantile([r["floor"] for r in rows], .99)
        label = "recorded times" if recorded else "never pauses"
        epochs = sum(r["mode"] == "epoch" for r in rows)
        print(f"  {label}: {len(rows)} requests, {epochs} epochs; floor p50 {floor50:.2f} ms, p99 {floor99:.2f} ms")
        for part in ("run", "after"):
            ms = [r[part] for r in rows]
            p50, p99 = _quantile(ms, .5), _quantile(ms, .99)
            print(f"    {part:<5} p50 {p50:6.2f} ({p50 / floor50:4.1f}×)  p99 {p99:6.2f} ({p99 / floor99:4.1f}×)  "
                  f"max {max(ms):6.2f}  total {sum(ms):7.0f} ms")


if __name__ == "__main__":
    main()
