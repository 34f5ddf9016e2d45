"""Linear time of crush_json and trim_outputs on pathological outputs.

Run: `python bench/pathological_stages.py [--scale 1.0]`. Each case is timed at half and full
size; a linear stage takes about twice as long at full size (ratio ~2, quadratic would be ~4).
Cases: one 20 MB line, a 1 million-line log (with a few errors), a JSON array of 1 million
small objects (table form) and of 1 million mixed objects (lossy crush), 100,000-deep nesting.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.runner.pipeline import Chain, run
from compress.stages import crush_json, trim_outputs
from compress.state.session import Session


def request(tool: str, output: str) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": tool, "input": {"command": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}]},
        {"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]}


def single_line(n: int) -> str:
    return ("abc def " * (n // 8))[:n]


def log(n: int) -> str:
    return "\n".join("ERROR: disk full" if i % 100_000 == 7 else f"2024-01-01 12:00:{i % 60:02d} worker {i} ok"
                     for i in range(n))


def uniform_json(n: int) -> str:
    return json.dumps([{"id": i, "ok": True} for i in range(n)])


def mixed_json(n: int) -> str:
    return json.dumps([{"id": i, "ok": True} if i % 2 else {"id": i, "tag": "x"} for i in range(n)])


def deep_json(n: int) -> str:
    return "[" * n + "]" * n


CASES = [
    ("20 MB single line", "Bash", single_line, 20_000_000),
    ("1M-line log", "Bash", log, 1_000_000),
    ("JSON array of 1M objects (table)", "query", uniform_json, 1_000_000),
    ("JSON array of 1M mixed objects (crush)", "query", mixed_json, 1_000_000),
    ("100,000-deep JSON", "query", deep_json, 100_000),
]


def timed(output: str, tool: str) -> tuple[float, int, int]:
    body = request(tool, output)
    cfg = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1)
    started = time.perf_counter()
    result = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=cfg,
                 chain=Chain([crush_json.STAGE, trim_outputs.STAGE]))
    elapsed = time.perf_counter() - started
    assert not result.report.error, result.report.error
    return elapsed, result.report.tokens_before, result.report.tokens_after


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    print(f"{'case':42s} {'half s':>8s} {'full s':>8s} {'ratio':>6s}  tokens full → after")
    for name, tool, make, size in CASES:
        n = int(size * args.scale)
        half, _, _ = timed(make(n // 2), tool)
        full, before, after = timed(make(n), tool)
        print(f"{name:42s} {half:8.2f} {full:8.2f} {full / max(half, 1e-9):6.2f}  {before:,} → {after:,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
