"""The hand-off to a proxy worker, over the socket pair against through the shared region, side
by side in one run.

    python bench/bench_handoff.py [--turns 30 --tokens 150000]

Starts two real proxy worker pools of one worker each (`ctxmill.proxy.workerpool.WorkerPool`, as
the proxy does): one whose worker got the shared region (`ctxmill.proxy.frames.Region`), one
started as on a system without anonymous memory files (every frame over the socket). Each gets
the same bench_proxy.py session (~150K tokens, one more tool call per turn), turn by turn, --gap
seconds apart, alternating which goes first, so a busy machine slows both alike. Prints per mode
the median and p90 of the round trip (event loop: submit to answer), of the worker's own run
(`run_ms`) and of the round trip less that run (the hand-off). Timing only: nothing here is
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_proxy import conversation  # noqa: E402
from compress.config import CompressConfig  # noqa: E402
from ctxmill.proxy import worker  # noqa: E402
from ctxmill.proxy.workerpool import WorkerPool  # noqa: E402

MODES = ("socket", "region")


def _body(messages: list, turn: int) -> bytes:
    return orjson.dumps({"model": "claude-bench", "max_tokens": 1024, "stream": bool(turn % 2),
                         "system": [{"type": "text", "text": "You are a coding agent."}],
                         "metadata": {"user_id": "bench_0"}, "messages": messages})


def _pool(home: Path, mode: str) -> WorkerPool:
    setup = worker.WorkerSetup(sessions_root=home / mode / "sessions", ccr_root=home / mode / "ccr",
                               compress=CompressConfig(), chain=None, max_sessions=16)
    pool = WorkerPool(setup, 1)
    memfd = os.__dict__.pop("memfd_create", None) if mode == "socket" else None
    try:
        pool.start()  # offers its worker a region only where os.memfd_create exists
    finally:
        if memfd is not None:
            os.memfd_create = memfd  # type: ignore[attr-defined]
    return pool


async def _run(args: argparse.Namespace, home: Path) -> dict[str, dict[str, list[float]]]:
    pools = {mode: _pool(home, mode) for mode in MODES}
    messages, start = conversation(0, args.tokens, args.warmup + args.turns)
    key = "aa" * 16
    figures: dict[str, dict[str, list[float]]] = {m: {"round trip": [], "run": [], "hand-off": []} for m in MODES}
    try:
        for turn in range(args.warmup + args.turns):
            raw = _body(messages[:start + 2 * turn], turn)
            for mode in (MODES if turn % 2 else MODES[::-1]):
                await asyncio.sleep(args.gap)  # the last run's state is written meanwhile, as while a model answers
                began = time.perf_counter()
                summary = await pools[mode].submit(key, worker.compress_request, key, raw, None).done
                took = (time.perf_counter() - began) * 1000
                if turn < args.warmup or summary.mode != "incremental":
                    continue
                f = figures[mode]
                f["round trip"].append(took)
                f["run"].append(summary.run_ms)
                f["hand-off"].append(took - summary.run_ms)
    finally:
        for pool in pools.values():
            await pool.close()
    return figures


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--tokens", type=int, default=150_000)
    p.add_argument("--gap", type=float, default=0.1, help="seconds between jobs (the worker writes state meanwhile)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as home:
        figures = asyncio.run(_run(args, Path(home)))
    for mode, f in figures.items():
        parts = []
        for name, values in f.items():
            values.sort()
            if values:
                parts.append(f"{name} {values[len(values) // 2]:.2f} / {values[int(.9 * len(values))]:.2f}")
        print(f"{mode:>6} ({len(f['round trip'])} incremental runs; median / p90 ms): " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
