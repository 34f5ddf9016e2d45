"""Memory search speed, printed as a markdown table.

    python bench/memory_speed.py [--corpus DIR] [--entries 10000] [--runs 15]

- warm query latency (tokenize + top 10; per query the median of 5 runs) on an index of N entries (SciFact abstract sentences,
  SciFact claims as queries), against bm25s on the same entries in the same run;
- one-entry index update (tokenize + add) on that index, and the first query after it;
- cold `ctxmill memory search` end to end (new process each time, index already on disk) on a
  MEMORY.md of N entries mixing English and Chinese, for an English and a Chinese query.
Needs the `bench` extra (bm25s).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory.bm25 import Bm25Params, Index, weighted_terms  # noqa: E402
from memory.config import DEFAULT_BM25  # noqa: E402
from memory.entry import Entry  # noqa: E402
from memory.markdown import format_entry  # noqa: E402
from memory.tokenize import Tokenizer  # noqa: E402


def corpus_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    env = os.environ.get("CTXMILL_CORPUS")
    return Path(env) if env else REPO.parent / "shared" / "corpus"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def english_entries(root: Path, n: int) -> list[str]:
    out = []
    for doc in _jsonl(root / "scifact" / "corpus.jsonl"):
        out += [s.strip() + "." for s in doc["text"].split(". ") if len(s.split()) > 4]
        if len(out) >= n:
            break
    return out[:n]


def chinese_entries(root: Path, n: int) -> list[str]:
    out = []
    for doc in _jsonl(root / "cmrc2018-zh" / "corpus.jsonl"):
        out += [s.strip() + "。" for s in doc["text"].split("。") if len(s) > 10]
        if len(out) >= n:
            break
    return out[:n]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def time_each(fn, items, repeats: int = 1) -> list[float]:
    """Milliseconds per item; with repeats, the median of that many runs (filters out moments
    when a busy machine's scheduler preempts the process, not the cost of the item itself)."""
    out = []
    for item in items:
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn(item)
            runs.append((time.perf_counter() - start) * 1000)
        out.append(statistics.median(runs))
    return out


def warm_queries(entries: list[str], queries: list[str], params: Bm25Params, tokenizer: Tokenizer) -> dict:
    import bm25s

    index = Index(params)
    for i, text in enumerate(entries):
        index.add(i, weighted_terms(tokenizer.tokens(text), [], params.heading_weight))
    index.warm()
    for q in queries[:50]:
        index.search(tokenizer.tokens(q), 10)
    ours = time_each(lambda q: index.search(tokenizer.tokens(q), 10), queries, repeats=5)

    model = bm25s.BM25()
    model.index(bm25s.tokenize(entries, show_progress=False), show_progress=False)

    def bm25s_query(q):
        tokens = bm25s.tokenize([q], show_progress=False, return_ids=False)[0]
        tokens = [t for t in tokens if t in model.vocab_dict] or [next(iter(model.vocab_dict))]
        model.retrieve([tokens], k=10, show_progress=False, n_threads=0)

    for q in queries[:50]:
        bm25s_query(q)
    theirs = time_each(bm25s_query, queries, repeats=5)

    updates = [f"new memory entry {i} about cache invalidation in the build system" for i in range(200)]
    doc = len(entries)

    def add(text):
        nonlocal doc
        index.add(doc, weighted_terms(tokenizer.tokens(text), [], params.heading_weight))
        doc += 1

    update = time_each(add, updates)
    after_update = time_each(lambda q: index.search(tokenizer.tokens(q), 10), queries[:20])
    return {"ours": ours, "bm25s": theirs, "update": update, "after_update": after_update}


def cold_cli(entries_en: list[str], entries_zh: list[str], runs: int) -> dict:
    compileall.compile_dir(str(REPO), quiet=1, maxlevels=3)  # byte-code as an installed package has
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        (project / ".ctxmill").mkdir(parents=True)
        (project / ".git").mkdir()
        blocks = ["# Memory\n\n## Facts\n\n"]
        for i, text in enumerate(entries_en + entries_zh):
            blocks.append(format_entry(Entry(f"m-{i:08x}", "fact", text, "2025-01-01")))
        (project / ".ctxmill" / "MEMORY.md").write_text("".join(blocks), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in ("CTXMILL_HOME", "PYTHONDONTWRITEBYTECODE")}
        env.update(PYTHONPATH=str(REPO), XDG_DATA_HOME=str(Path(tmp) / "xdg"))
        cmd = [sys.executable, "-m", "ctxmill", "memory", "search"]

        def run(query):
            done = subprocess.run([*cmd, query], cwd=project, env=env, capture_output=True, text=True)
            assert done.returncode == 0 and done.stdout, done.stderr

        first = time_each(run, ["build the index once"])[0]
        run("北京 建立 jieba 缓存")
        english = time_each(run, ["gene expression in stem cells"] * runs)
        chinese = time_each(run, ["战国无双的游戏角色"] * runs)
        bare = time_each(lambda _: subprocess.run([sys.executable, "-c", "pass"], env=env), range(runs))
    return {"first": first, "english": english, "chinese": chinese, "bare": bare}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus")
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    root = corpus_dir(args.corpus) / "retrieval"
    if not root.is_dir():
        print(f"corpus not found at {root}; nothing to measure", file=sys.stderr)
        return 1
    cache = Path(tempfile.gettempdir()) / "ctxmill-bench-cache"
    tokenizer = Tokenizer(cache)
    entries = english_entries(root, args.entries)
    queries = [q["text"] for q in _jsonl(root / "scifact" / "queries.jsonl")][:1000]
    warm = warm_queries(entries, queries, DEFAULT_BM25, tokenizer)
    cold = cold_cli(english_entries(root, args.entries // 2), chinese_entries(root, args.entries // 2), args.runs)
    small = cold_cli(english_entries(root, 500), chinese_entries(root, 500), args.runs)

    ours, theirs = warm["ours"], warm["bm25s"]
    med = statistics.median
    print(f"{len(entries)} entries, {len(queries)} queries, {os.cpu_count()} cores, Python {sys.version.split()[0]}\n")
    print("| measurement | ctxmill | bm25s | target |")
    print("|---|---|---|---|")
    print(f"| warm query p50 (ms) | {med(ours):.3f} | {med(theirs):.3f} | ≤ 0.5, ≤ bm25s |")
    print(f"| warm query p99 (ms) | {percentile(ours, 99):.3f} | {percentile(theirs, 99):.3f} | ≤ 5 |")
    print(f"| p50 ratio ctxmill / bm25s | {med(ours) / med(theirs):.2f} | | ≤ 1 |")
    print(f"| one-entry index update p50 / max (ms) | {med(warm['update']):.3f} / {max(warm['update']):.3f} | | ≤ 5 |")
    print(f"| first query after an update p50 (ms) | {med(warm['after_update']):.2f} | | |")
    for size, runs in ((1000, small), (args.entries, cold)):
        print(f"| cold CLI search, English, {size} entries, p50 (ms) | {med(runs['english']):.0f} | | ≤ 150 |")
        print(f"| cold CLI search, Chinese, {size} entries, p50 (ms) | {med(runs['chinese']):.0f} | | ≤ 600 |")
        print(f"| (first search, builds the index of {size} entries) | {runs['first']:.0f} | | |")
    print(f"| (bare `python -c pass`) | {med(cold['bare']):.0f} | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
