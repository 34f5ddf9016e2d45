"""The adversarial suite's counts, for RELIABILITY.md: `python bench/adversarial.py [pytest args]`.

Runs tests/reliability/ (kills, concurrent writers, full disks, hostile input to the CLI, the
proxy, the hooks and the MCP server, slow clients, secret canaries at rest) and the canary
detection test with CTXMILL_TALLY set, so each adversarial test records what it tried, lost and
leaked (tests/reliability/tally.py), and prints one table row per kind of attempt, a total per
face (– where no test of the row measures that count), the commit, the date and the run's wall
time. The tests assert lost == leaked == 0 themselves; this only counts. The "redaction
time" face is a bench, not a test (`redaction_time`): it prints its own row with a column for
inputs slowed past the budget.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ["tests/reliability", "tests/test_redact_canaries.py"]


def _add(a: int | None, b: int | None) -> int | None:
    """Sum of counts, None (not measured) only when neither was measured."""
    return a if b is None else b if a is None else a + b


def _shown(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


def main() -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        tally = Path(tmp) / "tally.jsonl"
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *SUITE, *sys.argv[1:]],
                              cwd=ROOT, env={**os.environ, "CTXMILL_TALLY": str(tally)})
        rows = [json.loads(line) for line in tally.read_text().splitlines()] if tally.exists() else []
    merged: dict[tuple[str, str], list] = defaultdict(lambda: [0, None, None])
    for row in rows:
        counts = merged[row["face"], row["what"]]
        for i, name in enumerate(("tried", "lost", "leaked")):
            counts[i] = _add(counts[i], row[name])
    print("\n| face | what | tried | lost | leaked |\n|---|---|---:|---:|---:|")
    totals: dict[str, list] = defaultdict(lambda: [0, None, None])
    for (face, what), counts in sorted(merged.items()):
        print(f"| {face} | {what} | " + " | ".join(map(_shown, counts)) + " |")
        totals[face] = [_add(a, b) for a, b in zip(totals[face], counts)]
    for face, counts in sorted(totals.items()):
        print(f"| **{face}** | **all** | " + " | ".join(f"**{_shown(n)}**" for n in counts) + " |")
    slow = redaction_time()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    print(f"\ncommit {commit.stdout.strip() or '?'}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{time.monotonic() - started:.0f} s, pytest exit {done.returncode}")
    return done.returncode or slow


def redaction_time() -> int:
    """The "redaction time" face (bench/redact_speed.py in process): every adversarial shape at
    1 MB, a canary planted in each. tried = shapes; lost = shapes whose output differs between
    two runs; leaked = planted canaries left in the output; slowed = shapes over 1 s per MB."""
    sys.path.insert(0, str(ROOT))
    from bench.redact_speed import BUDGET, over_budget, run

    rows = run(with_grid=True)
    slowed = [r for r in rows if over_budget(r)]
    worst = max(rows, key=lambda r: r["s_per_mb"])
    print(f"\n| face | what | tried | lost | leaked | slowed past budget ({BUDGET:.0f} s per MB) |\n"
          "|---|---|---:|---:|---:|---:|")
    print(f"| redaction time | 1 MB adversarial and realistic inputs (slowest {worst['s_per_mb']:.2f} s/MB: "
          f"{worst['shape']}) | {len(rows)} | {sum(r['lost'] for r in rows)} | {sum(r['leaked'] for r in rows)} "
          f"| {len(slowed)} |")
    return 1 if slowed or any(r["lost"] or r["leaked"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
