"""What a proxy worker's memory grows by over many requests, by where it was allocated.

    python bench/proxy_growth.py [--shape growing] [--sessions 20 --turns 50]
    python bench/proxy_growth.py --shape steady [--sessions 20 --life 15 --rounds 60 --round-seconds 40]
                                 [--new-sessions-per-hour 100] [--no-trace]

Runs the sessions of bench/bench_proxy.py (~150K-token tool-using conversations, one more tool
call per turn) through one `ctxmill.proxy.worker.Worker` in this process (what the proxy's
workers run, with its state in a temporary folder), one request of every live session per round,
and takes tracemalloc snapshots after the warm-up rounds and at the end. Two shapes:
- `growing`: the same `--sessions` conversations grow for `--turns` rounds (what bench_proxy.py
  sends). The heap may grow with the conversations held; the summary gives it per MiB of their
  growth.
- `steady`: what a gateway sees: `--sessions` conversations are live at any time, each lives
  `--life` requests and then ends (the client compacts or the person starts over: a new session
  with a new first message takes its place), their phases staggered so the live conversations'
  bytes stay level. A round advances the clock the worker's idle rule reads (this script
  replaces `ctxmill.proxy.worker`'s `time.monotonic`) by `--round-seconds`: the time a person
  or agent takes per request. Ended sessions leave
  the worker's memory `idle_seconds` (10 minutes) after their last run, so after `--life` rounds plus that
  many seconds the heap must stay flat.
As in the proxy, a new session past `--new-sessions-per-hour` new session folders within the
(simulated) hour is kept in memory only (`ctxmill.proxy.sessions.SessionPool` decides), and such a
session never leaves by the idle rule (its state lives nowhere else).
Prints per round the process's resident memory, the Python heap (tracemalloc; `--no-trace`: not
traced, ~10 times quicker), the C heap in use and free (glibc's `mallinfo2`), what the worker
holds (sessions, of them memory-only; the memos' bytes and entries; the entries of the
pipeline's `functools.lru_cache`s), and, traced, the growth between the snapshots grouped by the
first ctxmill frame that allocated it, next to the growth of the live conversations themselves
(their JSON bytes).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import os
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from types import SimpleNamespace

import orjson

if not os.environ.get("PYTHONPATH"):  # PYTHONPATH=<tree> measures that tree's code (a baseline)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_proxy import _rss_mib, conversation
from compress.config import CompressConfig
from compress.stagekit import output_cut, stage
from compress.stagekit.memo import TextMemo
from ctxmill.proxy import worker as worker_module
from ctxmill.proxy.sessions import SessionPool
from ctxmill.proxy.worker import Worker, WorkerSetup
from ctxmill.proxy_config import DEFAULT_IDLE_SECONDS, ProxyConfig

ROOT = Path(worker_module.__file__).resolve().parents[2]
PROXY_ALLOWANCE = next(f.default for f in fields(ProxyConfig) if f.name == "new_sessions_per_hour")
"""The proxy's own allowance of new session folders an hour (past it new sessions are memory-only)."""


def _site(trace: tracemalloc.Traceback) -> str:
    """The innermost frame in ctxmill's own code (not this script): where the memory is kept."""
    for frame in reversed(trace):
        name = frame.filename
        if str(ROOT) in name and "bench/" not in name:
            return f"{Path(name).relative_to(ROOT)}:{frame.lineno}"
    return "elsewhere"


@dataclass
class Talk:
    """One live conversation: its session key, its messages, and how many it has sent so far."""

    key: str
    messages: list[dict]
    sent: int

    def request(self) -> bytes:
        return orjson.dumps({"model": "claude-bench", "max_tokens": 1024,
                             "system": [{"type": "text", "text": "You are a coding agent."}],
                             "metadata": {"user_id": f"bench_{self.key}"}, "messages": self.messages[:self.sent]})


def _talk(n: int, tokens: int, turns: int, phase: int = 0) -> Talk:
    messages, start = conversation(n, tokens, turns)
    return Talk(f"{n:032x}", messages, start + 2 * phase)


def growing(args: argparse.Namespace) -> Iterator[list[Talk]]:
    """The same conversations, each one tool call longer every round."""
    talks = [_talk(c, args.tokens, args.turns) for c in range(args.sessions)]
    for _ in range(args.turns):
        yield talks
        for t in talks:
            t.sent += 2


def steady(args: argparse.Namespace) -> Iterator[list[Talk]]:
    """`--sessions` live conversations, each replaced by a new one after `--life` requests; slot
    c starts its first conversation c/sessions of the way through its life."""
    life = args.life
    phases = [c * life // args.sessions for c in range(args.sessions)]
    talks = [_talk(c, args.tokens, life, phases[c]) for c in range(args.sessions)]
    age = list(phases)
    started = args.sessions
    for _ in range(args.rounds):
        yield talks
        for c in range(args.sessions):
            age[c] += 1
            if age[c] < life:
                talks[c].sent += 2
            else:  # ends: a new conversation (a new session key) takes the slot
                talks[c], age[c], started = _talk(started, args.tokens, life), 0, started + 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", choices=("growing", "steady"), default="growing")
    p.add_argument("--sessions", type=int, default=20, help="conversations live at once")
    p.add_argument("--turns", type=int, default=50, help="growing: rounds (requests per conversation)")
    p.add_argument("--life", type=int, default=15, help="steady: requests per conversation")
    p.add_argument("--rounds", type=int, default=60, help="steady: rounds")
    p.add_argument("--round-seconds", type=float, default=40.0, help="steady: worker clock seconds per round")
    p.add_argument("--warmup", type=int, default=None,
                   help="rounds before the first snapshot (default: 5 growing; steady: life + the idle rounds)")
    p.add_argument("--tokens", type=int, default=150_000)
    p.add_argument("--new-sessions-per-hour", type=int, metavar="N",
                   default=PROXY_ALLOWANCE,
                   help="new session folders per (simulated) hour; past it new sessions are memory-only (the proxy's)")
    p.add_argument("--no-trace", action="store_true", help="no tracemalloc: resident memory and counts only")
    args = p.parse_args()
    rounds = args.turns if args.shape == "growing" else args.rounds
    idle_rounds = int(DEFAULT_IDLE_SECONDS // args.round_seconds) + 1
    warmup = args.warmup or (5 if args.shape == "growing" else args.life + idle_rounds)
    if warmup >= rounds:
        p.error(f"--warmup {warmup} leaves no rounds to measure of {rounds}")
    now = [0.0]
    with tempfile.TemporaryDirectory() as home:
        setup = WorkerSetup(sessions_root=Path(home) / "sessions", ccr_root=Path(home) / "ccr",
                            compress=CompressConfig(), chain=None, max_sessions=10 * args.sessions)
        worker_module.time = SimpleNamespace(**{**vars(time), "monotonic": lambda: now[0]})  # type: ignore[assignment]
        worker = Worker(setup)
        folders = SessionPool(setup.sessions_root, setup.max_sessions, setup.max_sessions,
                              args.new_sessions_per_hour, clock=lambda: now[0])
        shape = growing(args) if args.shape == "growing" else steady(args)
        if not args.no_trace:
            tracemalloc.start(10)
        snapshots, sizes = {}, {}
        for n, talks in enumerate(shape, 1):
            total = 0
            for talk in talks:
                raw = talk.request()
                total += len(raw)
                persist = folders._entry(talk.key).directory is not None  # the proxy's SessionPool decides
                summary = worker.compress(talk.key, raw, persist=persist)
                worker.finish()
                worker.calibrate(talk.key, len(summary.data or raw) // 4, summary.tokens_after,
                                 summary.tokens_before / len(raw))
            now[0] += args.round_seconds
            print(f"round {n:3d}: {_held(worker)}, live conversations {total / 2**20:6.1f} MiB of JSON", flush=True)
            if n in (warmup, rounds):
                sizes[n] = total
                if not args.no_trace:
                    snapshots[n] = tracemalloc.take_snapshot()
        worker.store.close()
    if args.no_trace:
        return 0
    first, last = snapshots[warmup], snapshots[rounds]
    grown: Counter[str] = Counter()
    for stat in last.compare_to(first, "traceback"):
        grown[_site(stat.traceback)] += stat.size_diff
    live = (sizes[rounds] - sizes[warmup]) / 2**20
    heap = sum(grown.values()) / 2**20
    per = f" ({heap / live:.2f} MiB of heap per MiB of conversation)" if live > 0.5 else ""
    print(f"{args.shape}, from round {warmup} to {rounds} ({(rounds - warmup) * args.sessions} requests):"
          f" the live conversations grew {live:.1f} MiB of JSON; the heap grew {heap:.1f} MiB{per},"
          f" by where it is kept:")
    for site, size in grown.most_common(12):
        print(f"  {size / 2**20:+7.2f} MiB  {site}")
    return 0


def _held(worker: Worker) -> str:
    """What the process and its worker hold now, in one line (see the module's docstring)."""
    memory_only = sum(s.place is None for s in worker.states.values())
    traced = f", Python heap {tracemalloc.get_traced_memory()[0] / 2**20:6.1f} MiB" if tracemalloc.is_tracing() else ""
    c_heap = _c_heap_mib()
    heap = f", C heap in use {c_heap[0]:6.1f} + free {c_heap[1]:5.1f} MiB" if c_heap is not None else ""
    return (f"RSS {_rss_mib([os.getpid()]):6.1f} MiB{traced}{heap}, sessions held {len(worker.states):3d}"
            f" ({memory_only} memory-only), memos: trimmed {_memo(output_cut.TRIMMED)}, redacted {_memo(stage.REDACTED)},"
            f" lru_cache entries {_lru_entries():5d}")


def _memo(memo: TextMemo) -> str:
    """A memo's bytes (as it counts them) and entries."""
    return f"{memo.held_bytes() / 2**20:5.1f} MiB in {len(memo):5d}"


def _lru_entries() -> int:
    """Entries of every `functools.lru_cache` of ctxmill's modules (what they hold for sessions gone)."""
    roots = ("compress", "ccr", "ground", "ctxmill", "memory")
    return sum(f.cache_info().currsize for name, module in list(sys.modules.items()) if name.split(".")[0] in roots
               for f in vars(module).values() if isinstance(f, functools._lru_cache_wrapper))


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _c_heap_mib() -> tuple[float, float] | None:
    """(in use, free but kept) of glibc's heap in MiB, mmapped blocks included in use; None without glibc's `mallinfo2`."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _Mallinfo2
    info = mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20, info.fordblks / 2**20


if __name__ == "__main__":
    sys.exit(main())
