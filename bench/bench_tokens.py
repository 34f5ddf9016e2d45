"""Speed of token counting on 1 MB of mixed text (English, code, JSON, logs, Chinese).

    python -m pytest bench/bench_tokens.py --benchmark-only
Target: estimate_tokens <= 5 ms per MB.
"""

from __future__ import annotations

import json
import random

import pytest

from compress.token_counters import estimate_tokens, exact_counter
from ctxmill.settings import tiktoken_cache

_PARTS = (
    "The request handler validates the payload, then forwards it to the cache layer. ",
    "def load(path: str) -> dict:\n    with open(path) as fh:\n        return json.load(fh)\n",
    json.dumps({"id": 1234567, "status": "ok", "items": [1, 2, 3], "name": "ctxmill"}) + "\n",
    "2026-03-09T02:10:52Z ERROR worker[4312]: connection reset by peer (retry 3/5)\n",
    "会话已导出为安全的 JSON，接下来验证登录状态并补充忽略规则。\n",
)


@pytest.fixture(scope="module")
def mixed_megabyte() -> str:
    rng = random.Random(0)
    pieces, size = [], 0
    while size < 1_000_000:
        piece = rng.choice(_PARTS)
        pieces.append(piece)
        size += len(piece.encode("utf-8"))
    return "".join(pieces)


def test_estimate_tokens_1mb(benchmark, mixed_megabyte):
    assert benchmark(estimate_tokens, mixed_megabyte) > 0


def test_exact_o200k_1mb(benchmark, mixed_megabyte):
    counter = exact_counter(tiktoken_cache())
    if counter is None:
        pytest.skip("no exact o200k_base backend (pip install bpe-openai)")
    benchmark.pedantic(counter.count, args=(mixed_megabyte,), rounds=5)
