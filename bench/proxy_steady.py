"""Resident memory of real `ctxmill proxy` processes serving a steady gateway, round by round.

    python bench/proxy_steady.py [--sessions 20 --life 15 --rounds 110 --idle 20 --round-seconds 3]
                                 [--delay 0] [--workers N] [--baseline DIR] [--new-sessions-per-hour N|proxy]

The shape of `bench/proxy_growth.py --shape steady`, on the real processes: `--sessions`
conversations (~`--tokens`-token tool-using ones, from bench/bench_proxy.py) are live at any
time, each sends `--life` requests and then ends, replaced by a new session (a new first message),
their phases staggered so the live conversations' bytes stay level. A round sends one request of
every live session, all at once, then waits out `--round-seconds`. The proxy runs with
CTXMILL_IDLE_SECONDS=`--idle` (a bench-only setting, `ctxmill.commands.proxy`), so an ended
session leaves its worker's memory `--idle` seconds after its last request instead of 10 minutes:
after `--life` rounds plus the idle time the sessions held are level and every further request
only churns them. The bench's clock runs faster for the proxy's hourly allowance of new session
folders too (`[proxy] new_sessions_per_hour`, 100): it is scaled like the idle time (100 × 600 s /
`--idle`), else the bench's ~1,600 new sessions an hour would cross it after 100 sessions, and
every later one would be kept in memory only, where it never leaves by the idle rule (the flood
path: `--new-sessions-per-hour proxy` keeps the proxy's own allowance, and writes no setting, for a
checkout that has none).

After every round: the resident memory (RSS) of the proxy process and of its other processes
(workers, forkserver), and its stats (requests, deferred, epochs). At the end, per build: RSS at
the end of the warm-up (`--warmup`, default the life plus the idle rounds), at 1/4, 2/4, 3/4 of
the rest and at the end, and its slope over the rest (least squares, MiB per 1,000 requests).
With `--baseline DIR` the proxy of that checkout runs too, each round going to both builds (the
order alternating), so both see the same requests and the same machine load. What the workers'
memos hold is not in the proxy's stats: bench/proxy_growth.py measures it in process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_proxy import _descendants, _free_port, _proxy, _rss_mib, _wait_ready
from bench.proxy_growth import PROXY_ALLOWANCE, Talk, steady
from ctxmill.proxy_config import DEFAULT_IDLE_SECONDS

ROOT = Path(__file__).resolve().parents[1]


async def _send_round(http: httpx.AsyncClient, url: str, talks: list[Talk]) -> int:
    """One request of every live session, all at once; the number that failed."""
    async def one(talk: Talk) -> bool:
        try:
            r = await http.post(url + "/v1/messages", content=talk.request(),
                                headers={"x-api-key": "bench", "anthropic-version": "2023-06-01",
                                         "content-type": "application/json"})
            return r.status_code == 200
        except httpx.HTTPError:
            return False

    return sum(not ok for ok in await asyncio.gather(*(one(t) for t in talks)))


def _memory(pid: int) -> tuple[float, float]:
    """RSS MiB of the proxy process and of all its descendants (workers, forkserver)."""
    return _rss_mib([pid]), _rss_mib(_descendants(pid))


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs (0 for fewer than two distinct xs)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0


def summary(label: str, rows: list[tuple[int, float, float]], warmup: int) -> str:
    """One line per build: RSS (proxy + others) at the warm-up's end, the quarters of the rest and
    the end, the max after warm-up, and the slope after warm-up in MiB per 1,000 requests.
    `rows`: (requests sent so far, proxy MiB, others MiB) per round."""
    rest = rows[warmup - 1:]
    total = [p + o for _, p, o in rest]
    quarters = " / ".join(f"{total[len(total) * q // 4]:.0f}" for q in (1, 2, 3))
    per_k = 1000 * slope([float(n) for n, _, _ in rest], total)
    return (f"{label:>8}: RSS after warm-up (round {warmup}, {rest[0][0]} requests) {total[0]:.0f} MiB"
            f" (proxy {rest[0][1]:.0f} + others {rest[0][2]:.0f}) → {quarters} → end {total[-1]:.0f} MiB"
            f" (proxy {rest[-1][1]:.0f} + others {rest[-1][2]:.0f}), max {max(total):.0f};"
            f" slope {per_k:+.1f} MiB per 1,000 requests over {rest[-1][0] - rest[0][0]} requests")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=20, help="conversations live at once")
    p.add_argument("--life", type=int, default=15, help="requests per conversation before it ends")
    p.add_argument("--rounds", type=int, default=110, help="rounds (a request of every live session each)")
    p.add_argument("--idle", type=float, default=20.0, help="seconds an ended session stays in its worker's memory")
    p.add_argument("--round-seconds", type=float, default=3.0, help="least seconds per round")
    p.add_argument("--warmup", type=int, default=None, help="rounds before the figures (default: life + idle rounds)")
    p.add_argument("--tokens", type=int, default=150_000, help="size of each conversation's first request")
    p.add_argument("--delay", type=float, default=0.0, help="upstream answer delay in seconds")
    p.add_argument("--workers", type=int, default=None, help="the proxy's --workers (default: its own)")
    p.add_argument("--budget", default=None, help="the proxy's --latency-budget-ms (default: its own)")
    p.add_argument("--baseline", metavar="DIR", help="also run the proxy of this checkout, side by side")
    p.add_argument("--new-sessions-per-hour", metavar="N|proxy", default=None,
                   help="the proxy's allowance of new session folders (default: its own scaled like the idle time;"
                        " 'proxy': its own, unscaled, no setting written)")
    args = p.parse_args()
    warmup = args.warmup or args.life + int(args.idle // args.round_seconds) + 1
    if warmup >= args.rounds:
        p.error(f"--warmup {warmup} leaves no rounds to measure of {args.rounds}")
    allowance = (PROXY_ALLOWANCE if args.new_sessions_per_hour == "proxy" else
                 round(PROXY_ALLOWANCE * DEFAULT_IDLE_SECONDS / args.idle) if args.new_sessions_per_hour is None else
                 int(args.new_sessions_per_hour))
    config = "" if args.new_sessions_per_hour == "proxy" else f"[proxy]\nnew_sessions_per_hour = {allowance}\n"
    env = {**os.environ, "CTXMILL_IDLE_SECONDS": str(args.idle)}
    up_port = _free_port()
    args.upstream = f"http://127.0.0.1:{up_port}"
    builds = ([("baseline", Path(args.baseline).resolve())] if args.baseline else []) + [("proxy", ROOT)]
    upstream = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_upstream.py"), "--port", str(up_port),
                                 "--delay", str(args.delay)], env=env)
    rows: dict[str, list[tuple[int, float, float]]] = {label: [] for label, _ in builds}
    failed = 0
    try:
        _wait_ready(args.upstream, upstream)
        with contextlib.ExitStack() as stack:
            proxies = {label: stack.enter_context(_proxy(args, {**env, "PYTHONPATH": str(tree)}, config))
                       for label, tree in builds}
            print(f"{args.sessions} sessions live, {args.life} requests each, ~{args.tokens:,} tokens;"
                  f" idle {args.idle:g} s, rounds of at least {args.round_seconds:g} s, upstream delay"
                  f" {args.delay * 1000:.0f} ms; warm-up {warmup} rounds; the proxy's allowance {allowance} new"
                  f" session folders an hour; load average {os.getloadavg()[0]:.1f}", flush=True)
            failed, started = asyncio.run(_rounds(args, proxies, rows))
    finally:
        upstream.terminate()
        upstream.wait(timeout=10)
    print(f"load average at the end {os.getloadavg()[0]:.1f}; failed requests {failed}; {started} sessions in all"
          f" ({max(0, started - allowance)} past the allowance: memory-only)")
    for label, _ in builds:
        print(summary(label, rows[label], warmup))
    return 1 if failed else 0


async def _rounds(args: argparse.Namespace, proxies: dict, rows: dict) -> tuple[int, int]:
    """Send the steady shape's rounds to every build; print and keep each round's figures. The
    requests that failed and the sessions started."""
    failed, sent = 0, 0
    keys: set[str] = set()
    labels = list(proxies)
    limits = httpx.Limits(max_connections=2 * args.sessions)
    async with httpx.AsyncClient(timeout=120, limits=limits, trust_env=False) as http:
        for n, talks in enumerate(steady(args), 1):
            began = time.monotonic()
            order = labels if n % 2 else labels[::-1]
            for label in order:
                failed += await _send_round(http, proxies[label][0], talks)
            sent += len(talks)
            keys.update(t.key for t in talks)
            cells = []
            for label in labels:
                url, process = proxies[label]
                mine, others = _memory(process.pid)
                rows[label].append((sent, mine, others))
                totals = (await http.get(url + "/ctxmill/stats")).json()["totals"]
                cells.append(f"{label} {mine + others:5.0f} MiB (proxy {mine:4.0f} + others {others:4.0f}),"
                             f" deferred {totals['deferred']:4d}, epochs {totals['epochs']:3d}")
            took = time.monotonic() - began
            print(f"round {n:3d} ({sent:5d} requests, {took:4.1f} s): {' | '.join(cells)}", flush=True)
            await asyncio.sleep(max(0.0, args.round_seconds - took))
    return failed, len(keys)


if __name__ == "__main__":
    sys.exit(main())
