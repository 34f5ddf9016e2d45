"""Load benchmark of `ctxmill proxy` on loopback (bounded; stops by itself).

Starts the fake upstream (tests/fake_upstream.py, answering after --delay seconds like a model
would) and `ctxmill proxy` as separate processes on 127.0.0.1, then runs N concurrent clients ×
T turns of growing ~150K-token tool-using Anthropic conversations (alternating streaming and
JSON responses; client starts spread over one upstream delay), first directly against the
upstream, then through the proxy. Reports errors,
latency to the last response byte p50/p99 for both, the added latency (proxy − direct) and the
proxy's peak RSS (VmHWM). Run: python bench/bench_proxy.py [--clients 32 --turns 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
REMINDER = "<system-reminder>\nWhenever you read a file, consider whether it looks malicious.\n</system-reminder>"
WORDS = ("def class return self value item stock order price total error warning info debug test assert "
         "import from async await result config path file line build cache token request session").split()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _result_text(rng: random.Random, chars: int) -> str:
    lines, size = [], 0
    while size < chars:
        line = f"{len(lines) + 1:6d}\t" + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _pair(rng: random.Random, client: int, n: int, chars: int) -> list[dict]:
    tool_id = f"toolu_{client:03d}_{n:05d}"
    return [
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": " ".join(rng.choice(WORDS) for _ in range(60)), "signature": f"sig{n}"},
            {"type": "tool_use", "id": tool_id, "name": rng.choice(["Bash", "Read", "Grep"]),
             "input": {"command": f"pytest -q tests/test_{n}.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                      "content": _result_text(rng, chars) + "\n" + REMINDER}]},
    ]


def conversation(client: int, base_tokens: int, turns: int) -> list[dict]:
    """First user message, enough tool pairs for ~base_tokens, then one more pair per turn."""
    rng = random.Random(client)
    chars = 8_000
    pairs = base_tokens * 4 // chars
    messages = [{"role": "user", "content": f"Client {client}: make the failing test suite pass."}]
    for n in range(pairs + turns):
        messages += _pair(rng, client, n, chars)
    return messages, 1 + 2 * pairs


async def run_clients(url: str, clients: int, turns: int, base_tokens: int, stagger: float,
                      deadline: float) -> tuple[list[tuple[int, float]], int]:
    latencies: list[tuple[int, float]] = []
    errors = 0
    conversations = [conversation(c, base_tokens, turns) for c in range(clients)]  # not while timing
    limits = httpx.Limits(max_connections=clients * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits, trust_env=False) as http:
        async def one(client: int) -> None:
            nonlocal errors
            messages, start = conversations[client]
            await asyncio.sleep(stagger * client / clients)  # independent users do not arrive in lockstep
            for turn in range(turns):
                if time.monotonic() > deadline:
                    errors += 1
                    return
                body = orjson.dumps({"model": "claude-bench", "max_tokens": 1024, "stream": bool(turn % 2),
                                     "system": [{"type": "text", "text": "You are a coding agent."}],
                                     "metadata": {"user_id": f"bench_{client}"},
                                     "messages": messages[:start + 2 * turn]})
                began = time.perf_counter()
                try:
                    async with http.stream("POST", url + "/v1/messages", content=body,
                                           headers={"x-api-key": "bench", "anthropic-version": "2023-06-01",
                                                    "content-type": "application/json"}) as r:
                        async for _ in r.aiter_raw():
                            pass
                        ok = r.status_code == 200
                except httpx.HTTPError:
                    ok = False
                latencies.append((turn, (time.perf_counter() - began) * 1000))
                errors += not ok

        await asyncio.gather(*(one(c) for c in range(clients)))
    return latencies, errors


def _wait_ready(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            httpx.get(url + "/ctxmill/stats", timeout=1, trust_env=False)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not start")


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    """The proxy's worker processes (and its forkserver), found through /proc parent links."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _tree_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of the proxy process and of its worker processes (those alive now)."""
    workers = 0.0
    for child in _descendants(pid):
        try:
            workers += _cpu_seconds(child)
        except OSError:
            pass
    return _cpu_seconds(pid), workers


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--tokens", type=int, default=150_000, help="size of each conversation at turn 1")
    p.add_argument("--delay", type=float, default=1.0, help="upstream answer delay in seconds")
    p.add_argument("--budget", default=None, help="the proxy's --latency-budget-ms (default: its own)")
    p.add_argument("--workers", type=int, default=None, help="the proxy's --workers (default: its own)")
    p.add_argument("--time-limit", type=float, default=240, help="seconds per phase before giving up")
    args = p.parse_args()

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    up_port, proxy_port = _free_port(), _free_port()
    up_url, proxy_url = f"http://127.0.0.1:{up_port}", f"http://127.0.0.1:{proxy_port}"
    with tempfile.TemporaryDirectory() as home:
        upstream = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_upstream.py"), "--port", str(up_port),
                                     "--delay", str(args.delay)], env=env)
        proxy = subprocess.Popen([sys.executable, "-m", "ctxmill", "proxy", "--port", str(proxy_port),
                                  "--upstream-anthropic", up_url, "--home", home, "--log-level", "warning",
                                  *(["--latency-budget-ms", args.budget] if args.budget else []),
                                  *(["--workers", str(args.workers)] if args.workers else [])], env=env)
        try:
            _wait_ready(up_url, upstream)
            _wait_ready(proxy_url, proxy)
            if os.environ.get("BENCH_PROFILE"):  # e.g. BENCH_PROFILE="py-spy record -o prof.svg -p {pid}"
                subprocess.Popen(os.environ["BENCH_PROFILE"].format(pid=proxy.pid).split())
            results, used = {}, {}
            for name, url in (("direct", up_url), ("proxy", proxy_url)):
                began = time.monotonic()
                before = (*_tree_cpu(proxy.pid), _cpu_seconds(upstream.pid))
                lat, errors = asyncio.run(run_clients(url, args.clients, args.turns, args.tokens, args.delay,
                                                      began + args.time_limit))
                results[name] = (lat, errors, time.monotonic() - began)
                after = (*_tree_cpu(proxy.pid), _cpu_seconds(upstream.pid))
                used[name] = dict(zip(("proxy", "workers", "upstream"), (b - a for a, b in zip(before, after))))
            rss = _peak_rss_mib(proxy.pid)
            worker_rss = [_peak_rss_mib(p) for p in _descendants(proxy.pid)]
            stats = httpx.get(proxy_url + "/ctxmill/stats", timeout=10, trust_env=False).json()["totals"]
        finally:
            for proc in (proxy, upstream):
                proc.terminate()
                proc.wait(timeout=10)
    size = len(orjson.dumps(conversation(0, args.tokens, 0)[0]))
    print(f"{args.clients} clients × {args.turns} turns, ~{args.tokens:,}-token requests (~{size / 1e6:.2f} MB),"
          f" upstream delay {args.delay * 1000:.0f} ms")
    for name, (lat, errors, wall) in results.items():
        ms = [x for _, x in lat]
        print(f"  {name:<7} requests {len(lat):4d}  errors {errors}  p50 {_quantile(ms, .5):7.1f} ms"
              f"  p99 {_quantile(ms, .99):7.1f} ms  wall {wall:5.1f} s  CPU ms/request: proxy"
              f" {1000 * used[name]['proxy'] / len(lat):.1f} + workers {1000 * used[name]['workers'] / len(lat):.1f},"
              f" upstream {1000 * used[name]['upstream'] / len(lat):.1f}")
    for label, keep in (("all turns", lambda t: True), ("turn 1 (new sessions)", lambda t: t == 0),
                        ("turns 2+", lambda t: t > 0)):
        d = [x for t, x in results["direct"][0] if keep(t)]
        x = [x for t, x in results["proxy"][0] if keep(t)]
        print(f"  added latency, {label:<22}: p50 {_quantile(x, .5) - _quantile(d, .5):+7.1f} ms"
              f"  p99 {_quantile(x, .99) - _quantile(d, .99):+7.1f} ms")
    print(f"  proxy peak RSS {rss:.0f} MiB, its {len(worker_rss)} child processes (workers, forkserver)"
          f" {' + '.join(f'{r:.0f}' for r in worker_rss)} MiB · tokens {stats['tokens_before']:,} →"
          f" {stats['tokens_after']:,} · epochs {stats['epochs']} · failures {stats['failures']} · deferred {stats['deferred']}")
    return 1 if results["direct"][1] or results["proxy"][1] else 0


if __name__ == "__main__":
    sys.exit(main())
