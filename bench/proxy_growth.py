"""What a proxy worker's memory grows by over many requests, by where it was allocated.

    python bench/proxy_growth.py [--sessions 20 --turns 50]

Runs the sessions of bench/bench_proxy.py (~150K-token tool-using conversations, one more tool
call per turn) through one `ctxmill.proxy.worker.Worker` in this process (what the proxy's
workers run, with its state in a temporary folder), turn by turn across the sessions, and takes
tracemalloc snapshots after the warm-up turns and at the end. Prints the Python heap per turn
and the growth between the snapshots grouped by the first ctxmill frame that allocated it, next
to the growth of the conversations themselves (their JSON bytes): state that grows with the
sessions it holds is expected; anything else must be a bounded cache.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tracemalloc
from collections import Counter
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_proxy import conversation  # noqa: E402
from compress.config import CompressConfig  # noqa: E402
from ctxmill.proxy.worker import Worker, WorkerSetup  # noqa: E402


def _site(trace: tracemalloc.Traceback) -> str:
    """The innermost frame in ctxmill's own code (not this script): where the memory is kept."""
    for frame in reversed(trace):
        name = frame.filename
        if str(ROOT) in name and "bench/" not in name:
            return f"{Path(name).relative_to(ROOT)}:{frame.lineno}"
    return "elsewhere"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--turns", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5, help="turns per session before the first snapshot")
    p.add_argument("--tokens", type=int, default=150_000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as home:
        setup = WorkerSetup(sessions_root=Path(home) / "sessions", ccr_root=Path(home) / "ccr",
                            compress=CompressConfig(), chain=None, max_sessions=10 * args.sessions)
        worker = Worker(setup)
        talks = [conversation(c, args.tokens, args.turns) for c in range(args.sessions)]
        tracemalloc.start(10)
        snapshots, sizes = {}, {}
        for turn in range(args.turns):
            total = 0
            for c, (messages, start) in enumerate(talks):
                raw = orjson.dumps({"model": "claude-bench", "max_tokens": 1024,
                                    "system": [{"type": "text", "text": "You are a coding agent."}],
                                    "metadata": {"user_id": f"bench_{c}"}, "messages": messages[:start + 2 * turn]})
                total += len(raw)
                key = f"{c:032x}"
                summary = worker.compress(key, raw)
                worker.finish()
                worker.calibrate(key, len(summary.data or raw) // 4, summary.tokens_after,
                                 summary.tokens_before / len(raw))
            print(f"turn {turn + 1:3d}: Python heap {tracemalloc.get_traced_memory()[0] / 2**20:6.1f} MiB,"
                  f" conversations {total / 2**20:6.1f} MiB of JSON", flush=True)
            if turn + 1 in (args.warmup, args.turns):
                snapshots[turn + 1], sizes[turn + 1] = tracemalloc.take_snapshot(), total
        worker.store.close()
    first, last = snapshots[args.warmup], snapshots[args.turns]
    grown: Counter[str] = Counter()
    for stat in last.compare_to(first, "traceback"):
        grown[_site(stat.traceback)] += stat.size_diff
    print(f"from turn {args.warmup} to {args.turns}: the conversations grew"
          f" {(sizes[args.turns] - sizes[args.warmup]) / 2**20:.1f} MiB of JSON; the heap grew"
          f" {sum(grown.values()) / 2**20:.1f} MiB, by where it is kept:")
    for site, size in grown.most_common(12):
        print(f"  {size / 2**20:+7.2f} MiB  {site}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
