"""Where a gateway replica's CPU per request goes: the proxy worker's path, in one process.

`Worker`s of `ctxmill.proxy.worker` (one per "replica") over one real redis-server on a loopback
port, and the same conversations on the embedded store (files and SQLite) for the floor:
--clients synthetic conversations of bench/bench_proxy.py (--turns requests each, from
~--base-tokens tokens), each request to a random replica (seeded), run, state written, then
calibrated as the proxy does after the answer. Counts what the trust boundary and Redis cost per
request: Redis round trips (`execute_command` calls and pipelines), signed lines checked and
signed (and their bytes), session loads, whole reads of a state in Redis and reads of only what
another replica appended (tail reads); and CPU seconds per request (process time). With
--profile, the top functions by cumulative time. No HTTP, no event loop: the replica's worker only.
Run: python bench/gateway_cpu.py [--replicas 1,2,4 --clients 16 --turns 6 --profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import orjson

ROOT = Path(os.environ.get("CTXMILL_CODE") or Path(__file__).resolve().parents[1])
"""The code measured: this checkout, or another one (CTXMILL_CODE=/path/to/checkout, for a before/after)."""
sys.path.insert(0, str(ROOT))

from bench.bench_proxy import conversation  # noqa: E402
from tests.redis_fixture import RedisServer  # noqa: E402

STORE_KEY = b"bench-team-store-key-0123456789abcdef"


def bodies(clients: int, turns: int, base_tokens: int, first: int = 0) -> list[tuple[str, list[bytes]]]:
    """Conversations `first`, `first` + 1, …: each setup gets its own, so none finds another's
    results in the process's caches."""
    out = []
    for c in range(first, first + clients):
        messages, start = conversation(c, base_tokens, turns)
        out.append((f"bench{c}", [orjson.dumps({"model": "claude-bench", "max_tokens": 1024,
                                                "system": [{"type": "text", "text": "You are a coding agent."}],
                                                "messages": messages[:start + 2 * t]}) for t in range(turns)]))
    return out


class Counting:
    """Counts calls to the functions it wraps (module attribute, in place), the bytes of their
    last positional argument and the CPU time spent in them (a call inside another wrapped one
    counts in both)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self.cpu: Counter[str] = Counter()
        self._undo: list = []

    def wrap(self, owner, name: str, label: str) -> None:
        original = getattr(owner, name)

        def counted(*args, **kwargs):
            self.calls[label] += 1
            if args and isinstance(args[-1], bytes | bytearray):
                self.bytes[label] += len(args[-1])
            began = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.cpu[label] += time.process_time() - began

        setattr(owner, name, counted)
        self._undo.append((owner, name, original))

    def undo(self) -> None:
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)
        self._undo.clear()


def run(setups, conversations, seed: int, profile: bool) -> tuple[float, int, Counting, str]:
    import redis

    import compress.state.session as session_module
    import compress.state.session_store as store_module
    from ctxmill.proxy.worker import Worker

    workers = [Worker(setup) for setup in setups]
    rng = random.Random(seed)
    order = [(key, turn) for turn in range(len(conversations[0][1])) for key, _ in conversations]
    by_key = dict(conversations)
    counting = Counting()
    counting.wrap(redis.Redis, "execute_command", "redis command")
    counting.wrap(redis.client.Pipeline, "execute", "redis pipeline")
    counting.wrap(store_module, "open_line", "line verified")
    counting.wrap(store_module, "sign_line", "line signed")
    counting.wrap(session_module.Session, "load", "session load")
    counting.wrap(store_module.RedisState, "read", "whole read")
    if hasattr(store_module.RedisState, "read_since"):  # absent in a checkout from before it
        counting.wrap(store_module.RedisState, "read_since", "tail read")
    profiler = cProfile.Profile() if profile else None
    began = time.process_time()
    if profiler:
        profiler.enable()
    for key, turn in order:
        worker = workers[rng.randrange(len(workers))]
        raw = by_key[key][turn]
        summary = worker.compress(key, raw)
        worker.finish()
        if summary.tokens_after:
            worker.calibrate(key, round(summary.tokens_after * 1.3), summary.tokens_after, 0.3)
    if profiler:
        profiler.disable()
    cpu = time.process_time() - began
    counting.undo()
    text = ""
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(os.environ.get("CTXMILL_PROFILE_FILTER", ""), 45)
        text = out.getvalue()
    for worker in workers:
        worker.store.close()
    return cpu, len(order), counting, text


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--replicas", default="1,2,4")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--turns", type=int, default=6)
    p.add_argument("--base-tokens", type=int, default=30_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()

    from compress.config import CompressConfig
    from ctxmill.proxy.worker import WorkerSetup
    from ground.redis_client import StoreAddress

    folder = Path(tempfile.mkdtemp(prefix="ctxmill-gwcpu-"))
    server = RedisServer(shutil.which("redis-server") or "redis-server", folder)
    server.start()
    rows = []
    try:
        def setup(store, sub: str) -> WorkerSetup:
            return WorkerSetup(sessions_root=folder / sub / "sessions", ccr_root=folder / sub / "ccr",
                               compress=CompressConfig(), chain=None, max_sessions=1000, store=store)

        plans = [("embedded (files + SQLite)", [setup(None, "embedded")])]
        for n in (int(x) for x in args.replicas.split(",")):
            address = StoreAddress.parse(f"{server.url}?prefix=r{n}:").with_key(STORE_KEY)
            plans.append((f"{n} replica{'s' if n > 1 else ''}, Redis", [setup(address, f"r{n}-{i}") for i in range(n)]))
        run([setup(None, "warm")], bodies(2, 2, args.base_tokens, 900), args.seed, False)  # lazy imports, regexes
        for i, (label, setups) in enumerate(plans):
            conversations = bodies(args.clients, args.turns, args.base_tokens, 100 * i)
            cpu, requests, counting, text = run(setups, conversations, args.seed, args.profile)
            rows.append((label, cpu * 1000 / requests, counting, requests))
            if text:
                print(f"## {label}\n{text}")
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    labels = ["redis command", "redis pipeline", "session load", "whole read", "tail read", "line verified",
              "line signed"]
    print("per request: calls (CPU ms in them)")
    print("| setup | CPU per request | " + " | ".join(labels) + " | bytes verified | bytes signed |")
    print("|---|---:|" + "---:|" * (len(labels) + 2))
    for label, ms, c, n in rows:
        cells = " | ".join(f"{c.calls[x] / n:.1f} ({1000 * c.cpu[x] / n:.2f})" for x in labels)
        print(f"| {label} | {ms:.1f} ms | {cells} | {c.bytes['line verified'] / n:,.0f} | "
              f"{c.bytes['line signed'] / n:,.0f} |")


if __name__ == "__main__":
    main()
