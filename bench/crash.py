"""Kill and concurrency figures with large budgets (tests/reliability/test_crash_safety.py runs
the same harness, tests/reliability/crashkit.py, with small ones).

Run: `python bench/crash.py [--kills 500] [--workers 8] [--rounds 300]`. Prints, per writer
(memory, CCR, session state), the SIGKILL iterations survived and commits checked, then the
concurrent run's operations; any lost, partial or duplicated entry is printed and exits 1.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.reliability.crashkit import kill_loop, run_concurrently


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=500, help="SIGKILL iterations per writer")
    parser.add_argument("--max-delay", type=float, default=0.1,
                        help="kill within this many seconds after the writer's first commit")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=300, help="memory + CCR rounds per concurrent process")
    args = parser.parse_args()
    failures = []
    for kind in ("memory", "ccr", "session"):
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            outcome = kill_loop(kind, Path(folder), args.kills, args.max_delay, seed=11)
        failures += outcome.failures
        print(f"{kind}: {outcome.iterations} kills survived, {outcome.committed:,} commits checked, "
              f"{len(outcome.failures)} problems, {time.perf_counter() - started:.0f} s", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        outcome = run_concurrently(Path(folder), args.workers, args.rounds, seed=3)
    failures += outcome.failures
    print(f"concurrent: {args.workers} processes × {args.rounds} rounds, {outcome.committed:,} operations "
          f"committed (memory store/forget + CCR batches, searches besides), {len(outcome.failures)} problems")
    for failure in failures[:20]:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
