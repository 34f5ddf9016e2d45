"""Memory search speed on the product path, printed as a markdown table.

    python bench/memory_speed.py [--corpus DIR] [--entries 10000] [--queries 1000] [--runs 15]

Every number is `memory.api.search` -- what `memory_search` and `ctxmill memory search` run
(index file, sync with the files, recency decay on, top 10, hits with snippets) -- on a
MEMORY.md of N entries: SciFact abstract sentences with a type and an age of 0-729 days from a
hash of the text (so decay is in play), SciFact claims as queries.

- warm search p50 / p99 (per query the median of 5 runs: a busy machine's preemptions are not
  the cost of a query), and beside it the bare BM25 index (same tokens, no decay, no files) and
  bm25s on the same entries, as references;
- a search right after a `memory.api.store` in the same process (what the MCP server does),
  right after a memory-tool write (memory.files), and right after another process changed
  MEMORY.md (the index re-reads the file);
- cold `ctxmill memory search` (a new process each time, index on disk): wall time and the CPU
  time of the process (user + system), median of --runs, for an English query, a Chinese query
  none of whose words of 3+ characters the memory holds (no jieba), and a Chinese query jieba
  must cut; 1,000 and N entries.
Needs the `bench` extra (bm25s).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import xxhash

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory import api  # noqa: E402
from memory.bm25 import Index, weighted_terms  # noqa: E402
from memory.config import DEFAULT_BM25, MemoryConfig  # noqa: E402
from memory.entry import SECTIONS, Entry  # noqa: E402
from memory.markdown import format_entry  # noqa: E402
from memory.tokenize import Tokenizer  # noqa: E402

_TYPES = ("decision", "gotcha", "fact", "note")
COLD_QUERIES = {  # name -> query of the cold CLI searches
    "English": "gene expression in stem cells",
    "Chinese": "战国无双的游戏角色",
    "Chinese, jieba": "尤金袋鼠为什么会被认为是害虫",  # 为什么 is one of the memory's words
}


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


def memory_text(texts: list[str]) -> str:
    today = date.today()
    sections: dict[str, list[str]] = {t: [] for t in _TYPES}
    for i, text in enumerate(texts):
        h = xxhash.xxh64_intdigest(text.encode())
        kind = _TYPES[h % len(_TYPES)]
        created = (today - timedelta(days=(h >> 8) % 730)).isoformat()
        sections[kind].append(format_entry(Entry(f"m-{i:08x}", kind, " ".join(text.split()), created)))
    return "# Memory\n" + "".join(f"\n## {SECTIONS[k]}\n\n" + "".join(v) for k, v in sections.items() if v)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def time_each(fn, items, repeats: int = 1, clock=time.perf_counter) -> list[float]:
    """Milliseconds per item; with repeats, the median of that many runs. `clock`: wall time, or
    time.process_time for the CPU time of this process (what a busy machine's other jobs do not add)."""
    out = []
    for item in items:
        runs = []
        for _ in range(repeats):
            start = clock()
            fn(item)
            runs.append((clock() - start) * 1000)
        out.append(statistics.median(runs))
    return out


def project(tmp: Path, name: str, text: str, cache: Path) -> MemoryConfig:
    home = tmp / name / ".ctxmill"
    home.mkdir(parents=True)
    (tmp / name / ".git").mkdir()
    (home / "MEMORY.md").write_text(text, encoding="utf-8")
    past = time.time() - 3600  # a settled file, as on any search but the first seconds after a write
    os.utime(home / "MEMORY.md", (past, past))
    return MemoryConfig(project_home=home, global_home=tmp / name / "global", cache_dir=cache)


def warm(cfg: MemoryConfig, entries: list[str], queries: list[str], tokenizer: Tokenizer) -> dict:
    import bm25s

    api.search(cfg, "warm up", limit=10)
    for q in queries[:100]:
        api.search(cfg, q, limit=10)
    product = time_each(lambda q: api.search(cfg, q, limit=10), queries, repeats=5)
    product_cpu = time_each(lambda q: api.search(cfg, q, limit=10), queries, repeats=5, clock=time.process_time)

    index = Index(DEFAULT_BM25)
    for i, text in enumerate(entries):
        index.add(i, weighted_terms(tokenizer.tokens(text), [], DEFAULT_BM25.heading_weight))
    index.warm()
    bare = time_each(lambda q: index.search(tokenizer.tokens(q), 10), queries, repeats=5)

    model = bm25s.BM25()
    model.index(bm25s.tokenize(entries, show_progress=False), show_progress=False)

    def bm25s_query(q):
        tokens = bm25s.tokenize([q], show_progress=False, return_ids=False)[0]
        tokens = [t for t in tokens if t in model.vocab_dict] or [next(iter(model.vocab_dict))]
        model.retrieve([tokens], k=10, show_progress=False, n_threads=0)

    for q in queries[:50]:
        bm25s_query(q)
    theirs = time_each(bm25s_query, queries, repeats=5)
    return {"product": product, "product_cpu": product_cpu, "bare": bare, "bm25s": theirs}


def after_writes(cfg: MemoryConfig, queries: list[str], count: int = 20) -> dict:
    """Search right after an in-process store or memory-tool write; and right after another
    process's store."""
    from memory.files import MemoryFiles

    api.search(cfg, "warm up", limit=10)
    stores, searches, searches_cpu, tool_searches = [], [], [], []
    for i in range(count):
        start = time.perf_counter()
        api.store(cfg, "decision", f"bench entry {i}: cache invalidation in the build system goes through make")
        stores.append((time.perf_counter() - start) * 1000)
        start, cpu = time.perf_counter(), time.process_time()
        api.search(cfg, queries[i], limit=10)
        searches.append((time.perf_counter() - start) * 1000)
        searches_cpu.append((time.process_time() - cpu) * 1000)
    files = MemoryFiles(cfg)
    for i in range(count):
        with files.change() as f:
            f.write(f"/memories/bench/{i}.md", f"tool file {i}: the deploy key rotates every quarter")
        start = time.perf_counter()
        hits = api.search(cfg, f"tool file {i} deploy key", limit=1)
        tool_searches.append((time.perf_counter() - start) * 1000)
        assert hits and hits[0].entry.text.startswith(f"/memories/bench/{i}.md"), "a memory-tool write was not found"
    then = time_each(lambda q: api.search(cfg, q, limit=10), queries[count : count + 50])  # still within 2 s
    external = []
    for i in range(5):
        code = ("import sys; from pathlib import Path; from memory import api; from memory.config import MemoryConfig; "
                f"api.store(MemoryConfig(project_home=Path({str(cfg.project_home)!r}), global_home=Path({str(cfg.global_home)!r}), "
                f"cache_dir=Path({str(cfg.cache_dir)!r})), 'note', 'written by another process {i}')")
        subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
        external += time_each(lambda q: api.search(cfg, q, limit=10), [queries[100 + i]])
    return {"store": stores, "search": searches, "search_cpu": searches_cpu, "tool": tool_searches, "next": then,
            "external": external}


def cold_cli(cfg: MemoryConfig, runs: int) -> dict:
    project_dir = cfg.project_home.parent
    env = {k: v for k, v in os.environ.items() if k not in ("CTXMILL_HOME", "PYTHONDONTWRITEBYTECODE")}
    env.update(PYTHONPATH=str(REPO), XDG_DATA_HOME=str(cfg.global_home.parent / "xdg"))
    cmd = [sys.executable, "-m", "ctxmill", "memory", "search"]

    def run(query):
        done = subprocess.run([*cmd, query], cwd=project_dir, env=env, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout, done.stderr

    def measured(query) -> tuple[list[float], list[float]]:
        walls, cpus = [], []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            run(query)
            walls.append((time.perf_counter() - start) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        return walls, cpus

    first = time_each(run, ["build the index once"])[0]
    run(COLD_QUERIES["Chinese, jieba"] + " 北京大学")  # builds jieba's dictionary cache once
    index = api.open_index(cfg)  # which Chinese queries need jieba on this memory
    cuts = {name: any(index.has_long_word(q[i:j]) for i in range(len(q)) for j in range(i + 3, len(q) + 1))
            for name, q in COLD_QUERIES.items()}
    measures = {name: measured(query) for name, query in COLD_QUERIES.items()}

    def bare(_):
        subprocess.run([sys.executable, "-c", "pass"], env=env)

    bare_cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    bare_wall = time_each(bare, range(runs))
    bare_cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    bare_cpu = (bare_cpu_after.ru_utime - bare_cpu_before.ru_utime + bare_cpu_after.ru_stime - bare_cpu_before.ru_stime) * 1000 / runs
    return {"first": first, "queries": measures, "jieba": cuts, "bare": (bare_wall, bare_cpu)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus")
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    root = corpus_dir(args.corpus) / "retrieval"
    if not root.is_dir():
        print(f"corpus not found at {root}; nothing to measure", file=sys.stderr)
        return 1
    compileall.compile_dir(str(REPO), quiet=1, maxlevels=3)  # byte-code as an installed package has
    cache = Path(tempfile.gettempdir()) / "ctxmill-bench-cache"
    tokenizer = Tokenizer(cache)
    entries = english_entries(root, args.entries)
    queries = [q["text"] for q in _jsonl(root / "scifact" / "queries.jsonl")][: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        big = project(tmp, "warm", memory_text(entries), cache)
        w = warm(big, entries, queries, tokenizer)
        writes = after_writes(project(tmp, "writes", memory_text(entries), cache), queries)
        half = args.entries // 2
        cold = cold_cli(project(tmp, "cold", memory_text(english_entries(root, half) + chinese_entries(root, half)), cache), args.runs)
        small = cold_cli(project(tmp, "small", memory_text(english_entries(root, 500) + chinese_entries(root, 500)), cache), args.runs)

    med, p99 = statistics.median, (lambda v: percentile(v, 99))
    print(f"{len(entries)} entries, {len(queries)} queries, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| measurement | product path (`memory.api.search`, decay on) | bare index | bm25s | target |")
    print("|---|---:|---:|---:|---:|")
    print(f"| warm search p50 (ms) | {med(w['product']):.3f} | {med(w['bare']):.3f} | {med(w['bm25s']):.3f} | ≤ 0.5 |")
    print(f"| warm search p99 (ms) | {p99(w['product']):.3f} | {p99(w['bare']):.3f} | {p99(w['bm25s']):.3f} | ≤ 3 |")
    print(f"| warm search CPU p50 / p99 (ms) | {med(w['product_cpu']):.3f} / {p99(w['product_cpu']):.3f} | | | |")
    print(f"| `store` (ms), p50 / max | {med(writes['store']):.1f} / {max(writes['store']):.1f} | | | |")
    print(f"| search right after a store, p50 / max (ms) | {med(writes['search']):.2f} / {max(writes['search']):.2f} | | | ≤ 50 |")
    print(f"| (its CPU, p50 / max, ms) | {med(writes['search_cpu']):.2f} / {max(writes['search_cpu']):.2f} | | | |")
    print(f"| next searches, within 2 s of the store, p50 / max (ms) | {med(writes['next']):.2f} / {max(writes['next']):.2f} | | | |")
    print(f"| search right after a memory-tool write, p50 / max (ms) | {med(writes['tool']):.2f} / {max(writes['tool']):.2f} | | | |")
    print(f"| search right after another process's store, p50 / max (ms) | {med(writes['external']):.1f}"
          f" / {max(writes['external']):.1f} | | | |")
    for size, runs in ((1000, small), (args.entries, cold)):
        for name, (walls, cpus) in runs["queries"].items():
            cut = (", cut with jieba" if runs["jieba"][name] else ", no jieba") if name.startswith("Chinese") else ""
            print(f"| cold CLI search, {name.split(',')[0]} `{COLD_QUERIES[name]}`{cut}, {size:,} entries: CPU / wall p50 (ms) "
                  f"| {med(cpus):.0f} / {med(walls):.0f} | | | ≤ 100 CPU |")
        print(f"| (first search: builds the index of {size:,} entries, ms) | {runs['first']:.0f} | | | |")
    print(f"| (bare `python -c pass`: CPU / wall ms) | {cold['bare'][1]:.0f} / {med(cold['bare'][0]):.0f} | | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
