"""The history store fed the whole corpus: `python bench/history_corpus.py [--max-mb N]`.

Imports every session of ../shared/corpus/transcripts (CTXMILL_CORPUS), oldest file first, as
`ctxmill import` does: into a store with a size budget (default 32 MB, well under the corpus, so
eviction runs), measuring its size after every file; into a store without one, then once more
(nothing new: the incremental path). Prints the time per MB, what each store holds, the budget
store's largest size, and the latency of word and regex searches over the whole corpus. Exit 1
when the store ever ends an ingest over budget.
Skips (exit 0, one line) when the corpus is absent.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
QUERIES = ("build failed test", "database migration", "git push rejected", "权限 配置", "docker compose")
PATTERNS = (r"error\[E\d{4}\]", r"TypeError: .* is not a function", r"npm ERR!")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-mb", type=float, default=32.0)
    args = parser.parse_args()
    from compress.formats.sessions import UnknownFormat, session_files
    from memory.history.config import HistoryConfig
    from memory.history.ingest import ingest_file
    from memory.history.query import search
    from memory.history.store import HistoryStore

    folder = CORPUS / "transcripts"
    if not folder.is_dir():
        print(f"corpus absent: {folder}")
        return 0
    files = sorted(session_files(folder), key=lambda p: (p.stat().st_mtime, str(p)))
    total = sum(p.stat().st_size for p in files)
    with tempfile.TemporaryDirectory() as tmp:
        budget = HistoryConfig(Path(tmp) / "budget.sqlite3", max_bytes=int(args.max_mb * 2**20))
        unbounded = HistoryConfig(Path(tmp) / "all.sqlite3", max_bytes=2**40)
        largest = 0
        for label, cfg in (("budget store", budget), ("unbounded store", unbounded), ("again (incremental)", unbounded)):
            evicted = failed = written = 0
            start = time.perf_counter()
            for n, path in enumerate(files):
                try:
                    done = ingest_file(cfg, path, "/corpus", updated=float(n))
                except (OSError, UnknownFormat):
                    failed += 1
                    continue
                evicted, written = evicted + done.evicted, written + done.added
                if cfg is budget:
                    with HistoryStore.open(cfg) as store:
                        largest = max(largest, store.size())
            seconds = time.perf_counter() - start
            with HistoryStore.open(cfg) as store:
                stats = store.stats()
            print(f"{label}: {len(files)} files, {total / 2**20:.1f} MB in {seconds:.1f} s "
                  f"({seconds / (total / 2**20) * 1000:.0f} ms/MB); {written:,} messages written, {evicted} sessions "
                  f"evicted, {failed} files unreadable; holds {stats['sessions']} sessions, {stats['messages']:,} "
                  f"messages, {stats['bytes'] / 2**20:.1f} MB")
        print(f"budget {args.max_mb:g} MB: largest after any ingest {largest / 2**20:.1f} MB")
        with HistoryStore.open(unbounded) as store:
            for kind, items, regex in (("words", QUERIES, False), ("regex", PATTERNS, True)):
                times = []
                for query in items:
                    t = time.perf_counter()
                    search(store, query, regex=regex)
                    times.append((time.perf_counter() - t) * 1000)
                print(f"search over the whole corpus ({kind}): median {statistics.median(times):.1f} ms, "
                      f"max {max(times):.1f} ms")
    return 1 if largest > args.max_mb * 2**20 else 0


if __name__ == "__main__":
    sys.exit(main())
