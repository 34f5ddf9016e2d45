"""pytest-benchmark: the pipeline on a REAL ~200K-token request, full (epoch) and incremental.

    python -m pytest bench/bench_pipeline_corpus.py --benchmark-only

The request is the longest prefix of the corpus' claude-flat session under 200K tokens (the
generated request of bench/bench_pipeline.py when the corpus is absent).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ccr.store import CCRStore
from compress.pipeline import run
from compress.session import Session
from compress.tokens import estimate_tokens

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
