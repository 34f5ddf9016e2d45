"""Load benchmark of `ctxmill proxy` on loopback (bounded; stops by itself).

Starts the fake upstream (tests/fake_upstream.py, answering after --delay seconds like a model
would) and `ctxmill proxy` as separate processes on 127.0.0.1, then runs N concurrent clients ×
T turns of growing ~150K-token tool-using Anthropic conversations (alternating streaming and
JSON responses; client starts spread over one upstream delay), first directly against the
upstream, then through a fresh proxy, once per number of concurrent sessions in --clients.
Each session first sends --warmup requests (default 3), all sessions at once, outside the timed
figures: its first request (an epoch on 150K tokens, deferred), the next (incremental on it, not
yet calibrated: a deferred request's answer calibrates nothing) and the first one sized by a
usage report (the stand-in counts more tokens than ctxmill's estimate, so its tier rises: an
epoch). A real client sends those once per session of hundreds of requests, while its
conversation is still small and they are cheap; they are reported apart as the session start.
Reports per phase: errors, the added latency to the last response byte (proxy − direct) p50/p99,
also as a ratio to the floor (one orjson loads + dumps of the request: what any JSON proxy pays,
so the ratio reads the same on any machine), the share of requests deferred past the latency
budget, CPU per request, and the proxy's and its workers' RSS after warm-up and at the end.
Run: python bench/bench_proxy.py [--clients 1,10,20 --turns 20]; a 1,000-request run for RSS:
--clients 20 --turns 50.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
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


def conversation(client: int, base_tokens: int, turns: int) -> tuple[list[dict], int]:
    """First user message, enough tool pairs for ~base_tokens, then one more pair per turn."""
    rng = random.Random(client)
    chars = 8_000
    pairs = base_tokens * 4 // chars
    messages = [{"role": "user", "content": f"Client {client}: make the failing test suite pass."}]
    for n in range(pairs + turns):
        messages += _pair(rng, client, n, chars)
    return messages, 1 + 2 * pairs


async def run_clients(url: str, clients: int, turns: range, base_tokens: int, stagger: float,
                      deadline: float) -> tuple[list[tuple[int, float]], int]:
    """Each client sends `turns` of its conversation in order; (turn, ms) per request, errors."""
    latencies: list[tuple[int, float]] = []
    errors = 0
    conversations = [conversation(c, base_tokens, turns.stop) for c in range(clients)]  # not while timing
    limits = httpx.Limits(max_connections=clients * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits, trust_env=False) as http:
        async def one(client: int) -> None:
            nonlocal errors
            messages, start = conversations[client]
            await asyncio.sleep(stagger * client / clients)  # independent users do not arrive in lockstep
            for turn in turns:
                if time.monotonic() > deadline:
                    errors += 1
                    return
                ms, ok = await _send(http, url, client, turn, messages[:start + 2 * turn])
                latencies.append((turn, ms))
                errors += not ok

        await asyncio.gather(*(one(c) for c in range(clients)))
    return latencies, errors


async def _send(http: httpx.AsyncClient, url: str, client: int, turn: int, messages: list) -> tuple[float, bool]:
    """One request of a client's session: (ms to its last response byte, whether it succeeded)."""
    body = orjson.dumps({"model": "claude-bench", "max_tokens": 1024, "stream": bool(turn % 2),
                         "system": [{"type": "text", "text": "You are a coding agent."}],
                         "metadata": {"user_id": f"bench_{client}"}, "messages": messages})
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
    return (time.perf_counter() - began) * 1000, ok


def paired(args, trees: list[tuple[str, Path]], env: dict, up_url: str, floor: float) -> int:
    """--paired: one session whose every turn goes directly, then through each build's proxy (all
    running at once, each with its own home), the order rotating turn by turn and one request at
    a time, so the machine's load drifts over all of them alike; a turn's added latency is its
    time through a proxy minus its time direct. The number of errors."""
    with contextlib.ExitStack() as stack:
        targets = {"direct": up_url, **{label: stack.enter_context(_proxy(args, {**env, "PYTHONPATH": str(tree)}))[0]
                                        for label, tree in trees}}
        names = list(targets)
        times: dict[str, list[float]] = {name: [] for name in names}
        messages, start = conversation(0, args.tokens, args.warmup + args.turns)

        async def session() -> int:
            errors = 0
            async with httpx.AsyncClient(timeout=60, trust_env=False) as http:
                for turn in range(args.warmup + args.turns):
                    for name in names[turn % len(names):] + names[:turn % len(names)]:
                        ms, ok = await _send(http, targets[name], 0, turn, messages[:start + 2 * turn])
                        errors += not ok
                        if turn >= args.warmup:
                            times[name].append(ms)
            return errors

        errors = asyncio.run(session())
    for name in names[1:]:
        added = [x - d for x, d in zip(times[name], times["direct"])]
        p50, p90 = _quantile(added, .5), _quantile(added, .9)
        print(f"{name:>8} paired, 1 session × {args.turns} turns: added p50 {p50:+.1f} ms ({p50 / floor:.1f}× floor),"
              f" p90 {p90:+.1f} ms, max {max(added):+.1f} ms; direct p50 {_quantile(times['direct'], .5):.1f} ms",
              flush=True)
    return errors


@contextlib.contextmanager
def _proxy(args, env: dict, config: str = "") -> Iterator[tuple[str, subprocess.Popen]]:
    """A fresh proxy of the checkout on env's PYTHONPATH, with a home of its own: its URL and process.
    `config`: the text of the user's own config.toml it reads (its `[proxy]` table), if any."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as home:
        if config:
            os.makedirs(os.path.join(home, "xdg", "ctxmill"))
            Path(home, "xdg", "ctxmill", "config.toml").write_text(config)
        proxy = subprocess.Popen([sys.executable, "-m", "ctxmill", "proxy", "--port", str(port),
                                  "--upstream-anthropic", args.upstream, "--home", home, "--log-level", "warning",
                                  *(["--latency-budget-ms", args.budget] if args.budget else []),
                                  *(["--workers", str(args.workers)] if args.workers else [])],
                                 env={**env, "XDG_DATA_HOME": os.path.join(home, "xdg")}, cwd=env["PYTHONPATH"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_ready(f"http://127.0.0.1:{port}", proxy)
            yield f"http://127.0.0.1:{port}", proxy
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)


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


def _rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _sample_rss(pid: int, done, out: list) -> None:
    """(time, RSS MiB of the proxy and its workers) every half second until `done` is set."""
    while not done.wait(0.5):
        out.append((time.monotonic(), _rss_mib([pid, *_descendants(pid)])))


def floor_ms(body: bytes, rounds: int = 30) -> float:
    """The floor: what any JSON proxy pays at least, one orjson loads + dumps of the body (median ms)."""
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        orjson.dumps(orjson.loads(body))
        times.append((time.perf_counter() - began) * 1000)
    return sorted(times)[len(times) // 2]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", default="1,10,20", help="concurrent sessions, one phase each (comma-separated)")
    p.add_argument("--turns", type=int, default=20, help="timed requests per session (after the warm-up)")
    p.add_argument("--warmup", type=int, default=3, help="requests per session before the timed ones (0: none)")
    p.add_argument("--tokens", type=int, default=150_000, help="size of each conversation at turn 1")
    p.add_argument("--delay", type=float, default=1.0, help="upstream answer delay in seconds")
    p.add_argument("--budget", default=None, help="the proxy's --latency-budget-ms (default: its own)")
    p.add_argument("--workers", type=int, default=None, help="the proxy's --workers (default: its own)")
    p.add_argument("--time-limit", type=float, default=400, help="seconds per phase before giving up")
    p.add_argument("--baseline", metavar="DIR", help="also run the proxy of this checkout (another commit), side by side")
    p.add_argument("--paired", action="store_true",
                   help="instead of the phases: one session, each turn direct and through every build in turn")
    args = p.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    up_port = _free_port()
    up_url = f"http://127.0.0.1:{up_port}"
    size = len(orjson.dumps(conversation(0, args.tokens, 0)[0]))
    sample = orjson.dumps({"model": "claude-bench",
                           "messages": conversation(0, args.tokens, args.warmup + args.turns)[0]})
    floor = floor_ms(sample)
    print(f"~{args.tokens:,}-token requests (~{size / 1e6:.2f} MB, {len(sample) / 1e6:.2f} MB at the last turn),"
          f" upstream delay {args.delay * 1000:.0f} ms; floor (orjson loads+dumps of the last request) {floor:.2f} ms")
    failed = 0
    upstream = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_upstream.py"), "--port", str(up_port),
                                 "--delay", str(args.delay)], env=env)
    args.upstream = up_url
    try:
        _wait_ready(up_url, upstream)
        if args.paired:
            builds = ([("baseline", Path(args.baseline))] if args.baseline else []) + [("proxy", ROOT)]
            return 1 if paired(args, builds, env, up_url, floor) else 0
        for clients in counts:
            for label, tree in ([("baseline", Path(args.baseline))] if args.baseline else []) + [("proxy", ROOT)]:
                failed += _phase(args, {**env, "PYTHONPATH": str(tree)}, up_url, upstream, clients, floor, label)
    finally:
        upstream.terminate()
        upstream.wait(timeout=10)
    return 1 if failed else 0


def _phase(args, env: dict, up_url: str, upstream: subprocess.Popen, clients: int, floor: float,
           label: str = "proxy") -> int:
    """Direct, then through a fresh proxy (of the checkout on env's PYTHONPATH): one line of
    figures; the number of errors."""
    with _proxy(args, env) as (proxy_url, proxy):
        if os.environ.get("BENCH_PROFILE"):  # e.g. BENCH_PROFILE="py-spy record -o prof.svg -p {pid}"
            subprocess.Popen(os.environ["BENCH_PROFILE"].format(pid=proxy.pid).split())
        results, used, rss, start = {}, {}, [], {}
        for name, url in (("direct", up_url), ("proxy", proxy_url)):
            start[name] = asyncio.run(run_clients(url, clients, range(args.warmup), args.tokens, args.delay,
                                                  time.monotonic() + args.time_limit))
            warm_stats = httpx.get(proxy_url + "/ctxmill/stats", timeout=10, trust_env=False).json()["totals"]
            began = time.monotonic()
            before = (*_tree_cpu(proxy.pid), _cpu_seconds(upstream.pid))
            sampling = name == "proxy"
            done = threading.Event()
            sampler = threading.Thread(target=_sample_rss, args=(proxy.pid, done, rss), daemon=True)
            if sampling:
                sampler.start()
            lat, errors = asyncio.run(run_clients(url, clients, range(args.warmup, args.warmup + args.turns),
                                                  args.tokens, args.delay, began + args.time_limit))
            done.set()
            results[name] = (lat, errors, time.monotonic() - began)
            after = (*_tree_cpu(proxy.pid), _cpu_seconds(upstream.pid))
            used[name] = dict(zip(("proxy", "workers", "upstream"), (b - a for a, b in zip(before, after))))
        stats = httpx.get(proxy_url + "/ctxmill/stats", timeout=10, trust_env=False).json()["totals"]
    d = [x for _, x in results["direct"][0]]
    x = [x for _, x in results["proxy"][0]]
    p50, p99 = _quantile(x, .5) - _quantile(d, .5), _quantile(x, .99) - _quantile(d, .99)
    timed = {k: stats[k] - warm_stats[k] for k in ("deferred", "requests", "epochs")}
    warm = [r for t, r in rss if t >= rss[0][0] + 0.1 * (rss[-1][0] - rss[0][0])] if rss else [float("nan")]
    n = len(x)
    print(f"{label:>8} {clients:3d} sessions × {args.turns} turns: {n} requests, errors {results['direct'][1]}/{results['proxy'][1]};"
          f" added p50 {p50:+.1f} ms ({p50 / floor:.1f}× floor), p99 {p99:+.1f} ms ({p99 / floor:.1f}× floor);"
          f" deferred {timed['deferred']}/{timed['requests']}"
          f" ({100 * timed['deferred'] / max(1, timed['requests']):.1f}%),"
          f" epochs {timed['epochs']}; CPU ms/request proxy {1000 * used['proxy']['proxy'] / n:.1f}"
          f" + workers {1000 * used['proxy']['workers'] / n:.1f};"
          f" RSS (proxy + workers) after warm-up {warm[0]:.0f} MiB, at 1/4 2/4 3/4 of the run"
          f" {' '.join(f'{warm[len(warm) * q // 4]:.0f}' for q in (1, 2, 3))} MiB, end {warm[-1]:.0f} MiB,"
          f" max {max(warm):.0f} MiB",
          flush=True)
    if args.warmup:
        sd = [ms for _, ms in start["direct"][0]]
        sx = [ms for _, ms in start["proxy"][0]]
        print(f"{'':>8} session start ({args.warmup} requests per session, before the figures above):"
              f" added p50 {_quantile(sx, .5) - _quantile(sd, .5):+.1f} ms, max {max(sx) - max(sd):+.1f} ms;"
              f" deferred {warm_stats['deferred']}/{warm_stats['requests']}, epochs {warm_stats['epochs']}",
              flush=True)
    return results["direct"][1] + results["proxy"][1] + start["direct"][1] + start["proxy"][1]


if __name__ == "__main__":
    sys.exit(main())
