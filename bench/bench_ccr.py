"""CCR hot-path benchmarks: `python -m pytest bench/bench_ccr.py` (pytest-benchmark).

Targets: a batch of 100 puts of ~4 KB commits in a few ms; a get is well under 1 ms;
find_markers stays linear on hostile text. The zlib benchmark measures what compressing
bodies would add to the put batch (the reason bodies are stored uncompressed).
"""

import itertools
import json
import os
import random
import zlib
from pathlib import Path

import pytest

from ccr.markers import find_markers
from ccr.store import CCRStore

CORPUS = Path(os.environ.get("CTXMILL_CORPUS") or Path(__file__).resolve().parents[1].parent / "shared" / "corpus")
WORDS = "def return self import from class value result error path line file test None if else for".split()
_counter = itertools.count()


def _texts(n: int = 100, size: int = 4096) -> list[str]:
    """Fresh (never stored before) code-like texts of about `size` characters."""
    rng = random.Random(next(_counter))
    texts = []
    for _ in range(n):
        lines, length = [f"# {next(_counter)}"], 0
        while length < size:
            line = "    " + " ".join(rng.choice(WORDS) for _ in range(8))
            lines.append(line)
            length += len(line) + 1
        texts.append("\n".join(lines))
    return texts


@pytest.fixture
def store(tmp_path):
    with CCRStore(tmp_path / "ccr") as s:
        with s.batch():
            for text in _texts(2000):
                s.put(text)
        yield s


def _put_batch(store, texts):
    with store.batch():
        for text in texts:
            store.put(text, hint="re-run the tool call `cat src/x.py`")


def test_put_batch_100x4kb_new(benchmark, store):
    benchmark.pedantic(_put_batch, setup=lambda: ((store, _texts()), {}), rounds=30)


def test_put_batch_100x4kb_already_stored(benchmark, store):
    texts = _texts()
    _put_batch(store, texts)
    benchmark(_put_batch, store, texts)


def test_single_put_4kb(benchmark, store):
    benchmark.pedantic(lambda text: store.put(text), setup=lambda: ((_texts(1)[0],), {}), rounds=200)


def test_get_4kb(benchmark, store):
    key = store.put(_texts(1)[0])
    assert benchmark(store.get, key).ok


def _tool_outputs() -> list[bytes]:
    folder = CORPUS / "transcripts" / "claude-flat"
    if not folder.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    outputs = []
    for path in folder.glob("*.jsonl"):
        for line in path.open(encoding="utf-8"):
            content = json.loads(line).get("content") or {}
            output = content.get("output") if isinstance(content, dict) else None
            if isinstance(output, str) and len(output) >= 1000:
                outputs.append(output.encode("utf-8"))
    return outputs[:100]


@pytest.mark.corpus
def test_zlib_level1_on_100_tool_outputs(benchmark):
    outputs = _tool_outputs()
    compressed = benchmark(lambda: [zlib.compress(o, 1) for o in outputs])
    benchmark.extra_info["outputs"] = len(outputs)
    benchmark.extra_info["mean_bytes"] = sum(map(len, outputs)) // len(outputs)
    benchmark.extra_info["ratio"] = round(sum(map(len, compressed)) / sum(map(len, outputs)), 3)


@pytest.mark.parametrize(
    "hostile",
    ["[ctxmill: " * 100_000, "\\[ctxmill: " * 100_000, ' · deep_expand("' + "<<ctxmill: \\" * 100_000],
    ids=["open-brackets", "escaped-opens", "note-opens"],
)
def test_find_markers_on_hostile_1mb(benchmark, hostile):
    assert benchmark(find_markers, hostile) == []
