"""A team's gateway on loopback: `ctxmill proxy --store redis://…` replicas over one redis-server.

Bounded, stops by itself; everything on 127.0.0.1 in temporary folders. The stand-in upstream
reports usage as a provider would, input tokens ≈ the request's size × 1.3 (`usage_factor`), so
calibration from reported usage is in play. Phases (`--skip` any of them):
1. identity: --sessions corpus Claude Code sessions (request k = the messages up to the k-th user
   turn, at most --turns per session) replayed at once through one `ctxmill proxy` on the
   embedded store (files and SQLite), then --runs times through 3 replicas on Redis, each
   request to the next replica (round-robin) and to a random one; every upstream body must be
   byte-identical to the embedded process's; every marker must expand from the store and through
   `ctxmill mcp --store`.
2. race: the same through 3 replicas whose workers pause 300 ms between each answer and writing
   its state (CTXMILL_SAVE_DELAY_MS), each request to the next replica: still identical.
3. team: `ctxmill stats --store` after phases 1–2: its one team figure against the sum of what
   the replicas' /ctxmill/stats say they handled.
4. kill: one session again on 3 replicas; one request's replica is SIGKILLed while it runs; the
   client retries on another. The retry must send the one-process bytes; every CCR key of the
   requests answered before the kill must expand.
5. faults: per Redis fault (stop, hang = SIGSTOP, restart, a lock key without a lease), one
   session on 2 replicas with the default latency budget: answers, latency and bytes of the
   requests during and after the fault.
6. latency: 16 concurrent synthetic conversations (bench/bench_proxy.py's) directly and through
   1, 2 and 4 replicas (default latency budget); added latency p50/p99; requests per second.
Run: python bench/gateway.py [--sessions 20 --turns 15 --runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_proxy import _cpu_seconds, _descendants, conversation  # noqa: E402
from bench.claude_code_requests import claude_code_sessions, session_messages  # noqa: E402
from ccr.expand import expand_first  # noqa: E402
from ccr.markers import find_markers  # noqa: E402
from ground.redis_client import StoreAddress, connect  # noqa: E402
from tests.fake_upstream import FakeUpstream, ServerThread  # noqa: E402
from tests.redis_fixture import RedisServer, free_port  # noqa: E402

STORE_KEY = "bench-team-store-key-0123456789abcdef"
WARM_TURNS = 2
"""Requests each replica answers before the latency phase counts its CPU (a long-running replica is warm)."""
HEADERS = {"x-api-key": "bench", "anthropic-version": "2023-06-01", "content-type": "application/json"}


class Replicas:
    """`ctxmill proxy` processes on one store; each its own home and port."""

    def __init__(self, folder: Path, store: str | None, upstream: str, count: int, budget: str = "none",
                 save_delay_ms: int = 0, code: Path = ROOT) -> None:
        """`store` None: the embedded store (files and SQLite), for comparison. `save_delay_ms`:
        the workers' pause between an answer and writing its state (the forced race). `code`:
        the checkout the replicas run (another one for a before/after: `--compare`)."""
        self.procs, self.urls = [], []
        env = {**os.environ, "PYTHONPATH": str(code), "XDG_DATA_HOME": str(folder / "xdg"),
               "CTXMILL_STORE_KEY": STORE_KEY, "CTXMILL_SAVE_DELAY_MS": str(save_delay_ms)}
        for i in range(count):
            home = folder / f"replica{i}-{time.monotonic_ns()}"
            home.mkdir(parents=True)
            port = free_port()
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), *(["--store", store] if store else []),
                 "--workers", "1",
                 "--latency-budget-ms", budget, "--upstream-anthropic", upstream, "--home", str(home),
                 "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            self.urls.append(f"http://127.0.0.1:{port}")
        for url, proc in zip(self.urls, self.procs):
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(url + "/ctxmill/stats", timeout=1, trust_env=False)
                    break
                except httpx.HTTPError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"replica {url} did not start") from None
                    time.sleep(0.2)

    def cpu_seconds(self) -> tuple[float, float]:
        """CPU time so far of the replicas' main processes and of their workers (call before `stop`)."""
        main = workers = 0.0
        for proc in self.procs:
            for pid in (proc.pid, *_descendants(proc.pid)):
                try:
                    spent = _cpu_seconds(pid)
                except OSError:
                    continue
                if pid == proc.pid:
                    main += spent
                else:
                    workers += spent
        return main, workers

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def corpus_turns(count: int, turns: int) -> list[list[bytes]]:
    """`count` corpus sessions (mid-sized ones), each as its request bodies (last `turns` user turns)."""
    paths = claude_code_sessions()
    if not paths:
        sys.exit("the corpus is absent (../shared/corpus): nothing to replay")
    chosen = sorted(paths, key=lambda p: p.stat().st_size)[len(paths) // 2:][:count]
    out = []
    for path in chosen:
        messages = session_messages(path)
        ends = [k for k in range(1, len(messages) + 1) if messages[k - 1]["role"] == "user"][-turns:]
        out.append([orjson.dumps({"model": "claude-bench", "max_tokens": 1024,
                                  "system": [{"type": "text", "text": "You are a coding agent."}],
                                  "metadata": {"user_id": f"gateway-{path.stem}"},
                                  "messages": messages[:k]}) for k in ends])
    return out


def post(url: str, body: bytes, tag: str, timeout: float = 60) -> int:
    return httpx.post(url + "/v1/messages", content=body, headers={**HEADERS, "x-bench": tag}, timeout=timeout,
                      trust_env=False).status_code


def received(fake: FakeUpstream, tag: str) -> bytes:
    return next(r.body for r in reversed(fake.received) if r.headers.get("x-bench") == tag)


def replay(urls: list[str], sessions: list[list[bytes]], fake: FakeUpstream, label: str, seed: int,
           policy: str = "random") -> dict:
    """Each session on its own thread, each request to a random replica (or, `policy`
    "round-robin", to the next one); {(session, k): upstream body}."""
    rng, out, errors = random.Random(seed), {}, []
    if policy == "random":
        picks = [[rng.choice(urls) for _ in turns] for turns in sessions]
    else:
        picks = [[urls[(s + k) % len(urls)] for k in range(len(turns))] for s, turns in enumerate(sessions)]

    def one(s: int) -> None:
        for k, body in enumerate(sessions[s]):
            tag = f"{label}/{s}/{k}"
            status = post(picks[s][k], body, tag)
            if status != 200:
                errors.append((tag, status))
                continue
            out[(s, k)] = received(fake, tag)

    threads = [threading.Thread(target=one, args=(s,)) for s in range(len(sessions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    if errors:
        print(f"  {label}: {len(errors)} errors: {errors[:3]}")
    return out


def keys_in(bodies) -> set[str]:
    return {m.key for body in bodies for m in find_markers(body.decode("utf-8", "replace"))}


def mcp_expands(store_url: str, keys: list[str], folder: Path) -> int:
    """How many of `keys` `ctxmill mcp --store` answers with deep_expand."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def talk() -> int:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(folder / "xdg"),
               "CTXMILL_HOME": str(folder / "mcp-home"), "CTXMILL_STORE_KEY": STORE_KEY}
        params = StdioServerParameters(command=sys.executable, args=["-m", "ctxmill", "mcp", "--store", store_url],
                                       env=env, cwd=str(folder))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            ok = 0
            for key in keys:
                ok += not (await session.call_tool("deep_expand", {"key": key, "lines": "1:3"})).is_error
            return ok
    return asyncio.run(talk())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def latency_run(urls: list[str], clients: int, turns: int, base_tokens: int, seed: int) -> tuple[list[float], int, float]:
    """16 concurrent synthetic conversations, each request to a random url; (ms per request, errors, seconds)."""
    conversations = [conversation(c + seed, base_tokens, turns) for c in range(clients)]
    rng = random.Random(seed)

    async def run() -> tuple[list[float], int]:
        times, errors = [], 0
        async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=clients * 2),
                                     trust_env=False) as http:
            async def one(c: int) -> None:
                nonlocal errors
                messages, start = conversations[c]
                await asyncio.sleep(0.05 * c)
                for turn in range(turns):
                    body = orjson.dumps({"model": "claude-bench", "max_tokens": 1024,
                                         "system": [{"type": "text", "text": "You are a coding agent."}],
                                         "metadata": {"user_id": f"lat-{seed}-{c}"},
                                         "messages": messages[:start + 2 * turn]})
                    began = time.perf_counter()
                    try:
                        r = await http.post(rng.choice(urls) + "/v1/messages", content=body, headers=HEADERS)
                        errors += r.status_code != 200
                    except httpx.HTTPError:
                        errors += 1
                    times.append((time.perf_counter() - began) * 1000)
            await asyncio.gather(*(one(c) for c in range(clients)))
        return times, errors
    began = time.perf_counter()
    times, errors = asyncio.run(run())
    return times, errors, time.perf_counter() - began


@contextlib.contextmanager
def loopback(name: str):
    """(a temporary folder, a started redis-server, the stand-in upstream and its server), all
    stopped and removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix=f"ctxmill-{name}-"))
    redis = RedisServer(shutil.which("redis-server") or sys.exit("redis-server is not installed"), folder)
    redis.start()
    fake = FakeUpstream()
    upstream = ServerThread(fake.app()).__enter__()
    try:
        yield folder, redis, fake, upstream
    finally:
        upstream.__exit__(None, None, None)
        redis.stop()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--turns", type=int, default=15, help="requests per corpus session (its last user turns)")
    p.add_argument("--runs", type=int, default=3, help="identity runs (each round-robin and random)")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--lat-turns", type=int, default=6)
    p.add_argument("--base-tokens", type=int, default=30_000)
    p.add_argument("--rounds", type=int, default=2, help="latency rounds (this machine's speed drifts)")
    p.add_argument("--compare", metavar="CHECKOUT", type=Path,
                   help="latency phase: also run the replicas from this checkout (e.g. main), side by side")
    p.add_argument("--skip", default="", help="comma-separated phases to skip: identity,race,team,kill,faults,latency")
    args = p.parse_args()
    skip = set(args.skip.split(","))
    with loopback("gateway") as (folder, redis, fake, upstream):
        fake.usage_factor = 1.3
        sessions = corpus_turns(args.sessions, args.turns)
        print(f"corpus: {len(sessions)} sessions, {sum(map(len, sessions))} requests, "
              f"{sum(len(b) for s in sessions for b in s) / 2**20:.1f} MiB of request bodies; the stand-in reports "
              f"input tokens = bytes / 4 × {fake.usage_factor}", flush=True)
        url = lambda prefix: f"{redis.url}?prefix={prefix}"  # noqa: E731
        one = Replicas(folder, None, upstream.url, 1)
        reference = replay(one.urls, sessions, fake, "one", 0)
        one.stop()
        if "identity" not in skip:
            identity_phase(folder, url, upstream.url, fake, sessions, reference, args.runs)
        if "race" not in skip:
            race = Replicas(folder, url("race:"), upstream.url, 3, save_delay_ms=300)
            shared = replay(race.urls, sessions, fake, "race", 7, policy="round-robin")
            handled = _handled(race)
            race.stop()
            print(f"race (workers pause 300 ms between answer and write, each request to the next replica): "
                  f"{_same(shared, reference)}/{len(reference)} byte-identical to one embedded process; "
                  f"{_team(url('race:'), folder, handled)}", flush=True)
        if "kill" not in skip:
            kill_phase(folder, url("kill:"), upstream.url, fake, sessions[0], reference)
        if "faults" not in skip:
            from bench.gateway_faults import faults_phase

            faults_phase(folder, redis, url, upstream.url, fake, sessions[0], Replicas, post, received)
        if "latency" not in skip:
            latency_phase(folder, redis, url, upstream.url, args)


def _same(shared: dict, reference: dict) -> int:
    return sum(shared.get(k) == v for k, v in reference.items())


def _handled(replicas: Replicas) -> int:
    return sum(httpx.get(u + "/ctxmill/stats", trust_env=False).json()["totals"]["requests"] for u in replicas.urls)


def _team(store: str, folder: Path, handled: int) -> str:
    return (f"team figure (`ctxmill stats --store`) {_team_requests(store, folder):,} requests, the replicas' "
            f"/ctxmill/stats {handled:,}")


def _team_requests(store: str, folder: Path) -> int:
    """The team figure `ctxmill stats --store` prints, as another user on another machine would see it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(folder / "someone-else"),
           "CTXMILL_STORE_KEY": STORE_KEY}
    deadline = time.monotonic() + 10  # the replicas have written their last rows within a second of stopping
    while True:
        out = subprocess.run([sys.executable, "-m", "ctxmill", "stats", "--json", "--store", store],
                             capture_output=True, env=env, timeout=120)
        if out.returncode == 0 or time.monotonic() > deadline:
            break
    return orjson.loads(out.stdout)["totals"]["requests"] if out.returncode == 0 else -1


def identity_phase(folder: Path, url, upstream: str, fake: FakeUpstream, sessions: list[list[bytes]],
                   reference: dict, runs: int) -> None:
    """Replicas vs the embedded process, `runs` times each way, each pass on a store (prefix) of its own."""
    for run in range(runs):
        for policy in ("round-robin", "random"):
            prefix = f"team{run}{policy[:2]}:"
            three = Replicas(folder, url(prefix), upstream, 3)
            shared = replay(three.urls, sessions, fake, f"three-{run}-{policy}", 25 + run, policy=policy)
            handled = _handled(three)
            three.stop()
            print(f"identity run {run + 1}, {policy}: {_same(shared, reference)}/{len(reference)} upstream bodies "
                  f"byte-identical to one embedded-store process; {_team(url(prefix), folder, handled)}", flush=True)
    keys = sorted(keys_in(shared.values()))
    store = StoreAddress.parse(url(prefix)).with_key(STORE_KEY.encode())
    found = sum(expand_first([], k, shared=store).ok for k in keys)
    sample = keys[:: max(1, len(keys) // 25)]
    print(f"  markers: {found}/{len(keys)} keys expand from the store; "
          f"{mcp_expands(url(prefix), sample, folder)}/{len(sample)} sampled through `ctxmill mcp --store`")
    client = connect(store)
    sizes = {"session": 0, "ccr": 0}
    for key in client.scan_iter(match=prefix + "*", count=1000):
        if key.startswith(f"{prefix}session:".encode()) or key.startswith(f"{prefix}ccr".encode()):
            sizes["session" if key.startswith(f"{prefix}session:".encode()) else "ccr"] += client.memory_usage(key) or 0
    client.close()
    print(f"  Redis per corpus session: {sizes['session'] / len(sessions) / 2**20:.2f} MiB of session state, "
          f"{sizes['ccr'] / len(sessions) / 2**20:.2f} MiB of originals", flush=True)
    return handled


def kill_phase(folder: Path, store: str, upstream: str, fake: FakeUpstream, turns: list[bytes], reference: dict) -> None:
    replicas = Replicas(folder, store, upstream, 3)
    try:
        _kill_and_retry(replicas, store, fake, turns, reference)
    finally:
        replicas.stop()


def _kill_and_retry(replicas: Replicas, store: str, fake: FakeUpstream, turns: list[bytes], reference: dict) -> None:
    middle, answered, took = len(turns) // 2, [], []
    for k in range(middle):
        began = time.perf_counter()
        assert post(replicas.urls[k % 3], turns[k], f"kill/{k}") == 200
        took.append(time.perf_counter() - began)
        answered.append(received(fake, f"kill/{k}"))
    victim = replicas.procs[middle % 3]
    result: dict = {}
    sender = threading.Thread(target=lambda: result.update(
        status=_status_or_error(replicas.urls[middle % 3], turns[middle], f"kill/{middle}")))
    address = StoreAddress.parse(store)
    client = connect(address)
    doomed = [*reversed(_descendants(victim.pid)), victim.pid]  # the worker first: it holds the lock
    sender.start()
    began, held = time.perf_counter(), False
    from ctxmill.proxy.identity import session_key

    lock = f"{address.prefix}session:proxy-{session_key('anthropic', orjson.loads(turns[middle]))}:lock"
    while not held and time.perf_counter() - began < 5:  # kill while its run holds the session's lock
        held = bool(client.exists(lock))
    delay = time.perf_counter() - began
    _kill_all(doomed)
    client.close()
    sender.join(60)
    alive = [u for i, u in enumerate(replicas.urls) if i != middle % 3]
    began = time.perf_counter()
    retry = post(alive[0], turns[middle], f"kill/{middle}/retry")
    waited = time.perf_counter() - began
    same = retry == 200 and received(fake, f"kill/{middle}/retry") == reference.get((0, middle))
    rest = all(post(alive[k % 2], turns[k], f"kill/{k}") == 200 and
               received(fake, f"kill/{k}") == reference.get((0, k)) for k in range(middle + 1, len(turns)))
    keys = sorted(keys_in(answered))
    found = sum(expand_first([], k, shared=StoreAddress.parse(store).with_key(STORE_KEY.encode())).ok for k in keys)
    print(f"kill: {1000 * delay:.0f} ms after request {middle} was sent (requests took {1000 * percentile(took, .5):.0f} ms "
          f"at the median), its replica was killed {'holding' if held else 'not holding'} the session's lock: "
          f"the client got {result.get('status')}; retry on another "
          f"replica {retry} in {waited:.2f} s, same bytes as one process: {same}; later requests same bytes: {rest}; "
          f"{found}/{len(keys)} keys of the requests answered before the kill expand")


def _status_or_error(url: str, body: bytes, tag: str) -> str:
    try:
        return str(post(url, body, tag, timeout=30))
    except httpx.HTTPError as exc:
        return type(exc).__name__


def _kill_all(pids: list[int]) -> None:
    """SIGKILL a replica and every process under it (its forkserver and worker), as a machine
    that dies takes all of them; `pids` listed beforehand, so the kill itself takes no time."""
    for child in pids:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def latency_phase(folder: Path, redis: RedisServer, url, upstream: str, args) -> None:
    client = connect(StoreAddress.parse(redis.url))
    direct, _, _ = latency_run([upstream], args.clients, args.lat_turns, args.base_tokens, 1000)
    print(f"latency ({args.clients} conversations x {args.lat_turns} turns, ~{args.base_tokens:,}-token start, "
          f"upstream answers at once): direct p50 {percentile(direct, .5):.1f} ms, p99 {percentile(direct, .99):.1f} ms")
    for round_ in range(args.rounds):
        codes = [(f"{args.compare.name}: ", args.compare), ("this checkout: ", ROOT)] if args.compare else [("", ROOT)]
        runs = [(count, n, *code) for count in (0, 1, 2, 4) for n, code in enumerate(codes)]
        for count, n, name, code in runs:  # count 0: one proxy on the embedded store, for comparison
            before = int(client.info("memory")["used_memory"])
            prefix = f"lat{round_}-{count}-{n}:"
            replicas = Replicas(folder, url(prefix) if count else None, upstream, max(count, 1), budget="25", code=code)
            cold = sum(replicas.cpu_seconds())
            for i, replica in enumerate(replicas.urls):  # each process's first requests: lazy imports, compiled regexes
                latency_run([replica], 1, WARM_TURNS, args.base_tokens, 5000 + 10 * i)
            started = replicas.cpu_seconds()
            times, errors, seconds = latency_run(replicas.urls, args.clients, args.lat_turns, args.base_tokens,
                                                 100 * round_ + count)
            main, workers = (after - before for after, before in zip(replicas.cpu_seconds(), started))
            cpu = main + workers
            replicas.stop()
            line = (f"  {name}{f'{count} replica(s)' if count else 'embedded store'}: p50 {percentile(times, .5):.1f} ms "
                    f"(+{percentile(times, .5) - percentile(direct, .5):.1f}), p99 {percentile(times, .99):.1f} ms "
                    f"(+{percentile(times, .99) - percentile(direct, .99):.1f}), {errors} errors, "
                    f"{len(times) / seconds:.1f} requests/s, {1000 * cpu / len(times):.1f} ms CPU per request "
                    f"(main processes {1000 * main / len(times):.1f}, workers {1000 * workers / len(times):.1f}; "
                    f"warm-up: {1000 * (sum(started) - cold) / max(count, 1):.0f} ms per replica)")
            if count:
                used = int(client.info("memory")["used_memory"]) - before
                own = sum(client.memory_usage(k) or 0 for k in client.scan_iter(match=prefix + "*", count=1000))
                line += (f"; Redis +{used / 2**20:.1f} MiB ({own / 2**20:.1f} MiB in its keys) = "
                         f"{own / args.clients / 2**20:.2f} MiB per conversation")
            print(line, flush=True)
    client.close()


if __name__ == "__main__":
    main()
