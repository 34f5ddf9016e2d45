"""Where the proxy's main process spends a request: cProfile of its event loop and a timestamped
request path, over one sequential session of bench_proxy.py's requests (bounded; stops by itself).

Starts the fake upstream and `ctxmill proxy` (this checkout) with the main process under
cProfile and the request path timestamped (time.monotonic, one clock for every process on the
machine), runs --warmup + --turns requests of one session through it, stops the proxy with
SIGINT (uvicorn's clean shutdown, so the profile is written) and prints, per step, the median
and p90 ms over the timed turns, then the profile's top functions by own time.
`--floor` measures what the proxy costs when compression does nothing, the floor of this
architecture: `forward` sends each request on untouched without reading its session key (the
HTTP hop alone: headers, body read, upstream request, relay); `handoff` also reads the key and
passes the body to the session's worker, which only takes its length, then sends the original
(the hop plus the hand-off of the request, without the compressed bytes coming back).
Run: python bench/profile_proxy.py [--turns 20] [--profile-out prof.out] [--floor forward|handoff]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

STEPS = ("client→handle", "body read", "session key", "pickle job", "worker run (round trip)", "unpickle answer",
         "compress total", "to upstream send", "upstream headers (− delay)", "first byte relayed",
         "last byte relayed", "relay end→client done")


def _instrument(floor: str = "") -> list[dict]:
    """In the proxy process: wrap the request path's steps to note when each one ends; the
    marks of each request (filled in as requests end). `floor`: see the module's docstring."""
    import pickle

    import httpx

    import ctxmill.proxy.app as app
    import ctxmill.proxy.identity_memo as identity_memo
    import ctxmill.proxy.relay as relay
    import ctxmill.proxy.workerpool as workerpool
    from ctxmill.proxy.sessions import Outcome

    marks: list[dict] = []
    current: dict = {}

    def note(name: str) -> None:
        current.setdefault(name, time.monotonic())

    handle = app.Proxy.handle

    async def timed_handle(self, request):
        current.clear()
        note("handle")
        response = await handle(self, request)
        note("handle returned")
        return response

    read = app.Proxy.read

    async def timed_read(self, *args):
        out = await read(self, *args)
        note("body read")
        return out

    identity = identity_memo.IdentityMemo.identify

    def timed_identity(*args):
        out = identity(*args)
        note("session key")
        return out

    if floor == "forward":
        def timed_identity(*args):  # the floor: no key, so forwarded untouched
            note("session key")
            return None, None

    compress = app.Proxy.compress
    if floor == "handoff":
        async def compress(self, entry, raw, context_window=None):  # the body to the worker, which takes its len
            await self.within_budget(entry.key, len, raw)
            return Outcome()

    async def timed_compress(self, *args):
        out = await compress(self, *args)
        note("compress total")
        current["deferred"] = out.deferred
        if out.summary is not None:
            current["run_ms"], current["mode"] = out.summary.run_ms, out.summary.mode
        return out

    dumps, loads = pickle.dumps, pickle.loads

    class TimedPickle:
        HIGHEST_PROTOCOL = pickle.HIGHEST_PROTOCOL

        @staticmethod
        def dumps(*args, **kw):
            note("pickle start")
            out = dumps(*args, **kw)
            note("pickle job")
            return out

        @staticmethod
        def loads(data):
            note("answer read")
            out = loads(data)
            note("unpickle answer")
            return out

    original_send = httpx.AsyncClient.send

    async def timed_send(client_self, request, **kw):
        note("to upstream send")
        response = await original_send(client_self, request, **kw)
        note("upstream headers")
        return response

    original_relay = relay.relay

    async def timed_relay(*args, **kw):
        first = True
        async for chunk in original_relay(*args, **kw):
            if first:
                note("first byte relayed")
                first = False
            yield chunk
        note("last byte relayed")
        marks.append(dict(current))

    for owner, name, timed in ((app.Proxy, "handle", timed_handle), (app.Proxy, "read", timed_read),
                               (identity_memo.IdentityMemo, "identify", timed_identity), (app.Proxy, "compress", timed_compress),
                               (workerpool, "pickle", TimedPickle), (httpx.AsyncClient, "send", timed_send),
                               (app, "relay", timed_relay)):
        setattr(owner, name, timed)
    return marks


def serve_profiled(argv: list[str], profile_out: str, marks_file: str, floor: str) -> None:
    """The proxy command under cProfile (main thread only: the event loop)."""
    import cProfile

    from ctxmill.cli import main

    marks = _instrument(floor)
    profile = cProfile.Profile() if profile_out != "-" else None  # "-": timestamps only (cProfile slows calls)
    if profile is not None:
        profile.enable()
    try:
        main(argv)
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(profile_out)
        Path(marks_file).write_text(json.dumps(marks))


def _report(client: list[tuple[float, float]], marks: list[dict], delay_s: float) -> None:
    rows: dict[str, list[float]] = {s: [] for s in STEPS}
    for (began, ended), m in zip(client, marks):
        pairs = [("client→handle", began, m["handle"]), ("body read", m["handle"], m["body read"]),
                 ("session key", m["body read"], m["session key"]),
                 ("pickle job", m.get("pickle start"), m.get("pickle job")),
                 ("worker run (round trip)", m.get("pickle job"), m.get("answer read")),
                 ("unpickle answer", m.get("answer read"), m.get("unpickle answer")),
                 ("compress total", m["session key"], m.get("compress total")),
                 ("to upstream send", m.get("compress total", m["session key"]), m["to upstream send"]),
                 ("upstream headers (− delay)", m["to upstream send"], m["upstream headers"]),
                 ("first byte relayed", m["upstream headers"], m["first byte relayed"]),
                 ("last byte relayed", m["first byte relayed"], m["last byte relayed"]),
                 ("relay end→client done", m["last byte relayed"], ended)]
        for name, a, b in pairs:
            if a is not None and b is not None:
                rows[name].append((b - a) * 1000 - (delay_s * 1000 if name.startswith("upstream headers") else 0))
    for name, values in rows.items():
        if values:
            values.sort()
            print(f"{name:>28}: median {values[len(values) // 2]:7.2f} ms, p90 {values[int(.9 * len(values))]:7.2f} ms"
                  f" ({len(values)} requests)")
    print("per request: total (− delay) ms, compress ms, run ms, mode, deferred")
    for (began, ended), m in zip(client, marks):
        print(f"  {(ended - began - delay_s) * 1000:7.2f} {1000 * (m.get('compress total', 0) - m['session key']):7.2f}"
              f" {m.get('run_ms', float('nan')):7.2f} {m.get('mode', '-')} {m.get('deferred')}")
    ipc = sorted(1000 * (m["answer read"] - m["pickle job"]) - m["run_ms"] for m in marks
                 if "run_ms" in m and "answer read" in m)
    if ipc:
        print(f"{'worker round trip − run':>28}: median {ipc[len(ipc) // 2]:7.2f} ms")
    runs = sorted(m["run_ms"] for m in marks if "run_ms" in m)
    if runs:
        print(f"{'of which the run (in worker)':>28}: median {runs[len(runs) // 2]:7.2f} ms, p90 {runs[int(.9 * len(runs))]:7.2f} ms")
    totals = sorted((e - b) * 1000 for b, e in client)
    print(f"{'client total (− delay)':>28}: median {totals[len(totals) // 2] - delay_s * 1000:7.2f} ms")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve_profiled(sys.argv[5:], sys.argv[2], sys.argv[3], sys.argv[4])
        return 0
    import bench_proxy
    import httpx
    import orjson

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--tokens", type=int, default=150_000)
    p.add_argument("--delay", type=float, default=1.0)
    p.add_argument("--profile-out", default=None, help="keep the cProfile output here (pstats format)")
    p.add_argument("--no-profile", action="store_true", help="timestamps only (cProfile slows every call)")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--floor", choices=("forward", "handoff"), default="",
                   help="compression does nothing: the request forwarded untouched, or only handed to a worker")
    args = p.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    up_port, proxy_port = bench_proxy._free_port(), bench_proxy._free_port()
    up_url, proxy_url = f"http://127.0.0.1:{up_port}", f"http://127.0.0.1:{proxy_port}"
    upstream = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_upstream.py"), "--port", str(up_port),
                                 "--delay", str(args.delay)], env=env)
    with tempfile.TemporaryDirectory() as home:
        profile_out = "-" if args.no_profile else args.profile_out or os.path.join(home, "proxy.prof")
        marks_file = os.path.join(home, "marks.json")
        proxy = subprocess.Popen([sys.executable, __file__, "--serve", profile_out, marks_file, args.floor,
                                  "proxy", "--port", str(proxy_port), "--upstream-anthropic", up_url,
                                  "--home", home, "--log-level", "warning"],
                                 env={**env, "XDG_DATA_HOME": os.path.join(home, "xdg")}, cwd=ROOT)
        try:
            bench_proxy._wait_ready(up_url, upstream)
            bench_proxy._wait_ready(proxy_url, proxy)
            direct = asyncio.run(_timed_session(up_url, args, bench_proxy, httpx, orjson))
            client = asyncio.run(_timed_session(proxy_url, args, bench_proxy, httpx, orjson))
        finally:
            proxy.send_signal(signal.SIGINT)
            proxy.wait(timeout=60)
            upstream.terminate()
            upstream.wait(timeout=10)
        marks = json.loads(Path(marks_file).read_text())[args.warmup:]
        _report(client, marks, args.delay)
        plain = sorted((e - b) * 1000 for b, e in direct)
        print(f"{'direct total (− delay)':>28}: median {plain[len(plain) // 2] - args.delay * 1000:7.2f} ms")
        if profile_out == "-":
            return 0
        import pstats

        print()
        pstats.Stats(profile_out).sort_stats("tottime").print_stats(args.top)
    return 0


async def _timed_session(url: str, args, bench_proxy, httpx, orjson) -> list[tuple[float, float]]:
    """(sent, last byte received) per timed request of one session, as bench_proxy sends them."""
    messages, start = bench_proxy.conversation(0, args.tokens, args.warmup + args.turns)
    out = []
    async with httpx.AsyncClient(timeout=60, trust_env=False) as http:
        for turn in range(args.warmup + args.turns):
            body = orjson.dumps({"model": "claude-bench", "max_tokens": 1024, "stream": bool(turn % 2),
                                 "system": [{"type": "text", "text": "You are a coding agent."}],
                                 "metadata": {"user_id": "bench_0"}, "messages": messages[:start + 2 * turn]})
            began = time.monotonic()
            async with http.stream("POST", url + "/v1/messages", content=body,
                                   headers={"x-api-key": "bench", "anthropic-version": "2023-06-01",
                                            "content-type": "application/json"}) as r:
                async for _ in r.aiter_raw():
                    pass
            if turn >= args.warmup:
                out.append((began, time.monotonic()))
    return out


if __name__ == "__main__":
    sys.exit(main())
