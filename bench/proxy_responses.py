"""What a large Codex request looks like upstream through `ctxmill proxy` (bounded; stops by itself).

Builds the Responses request of tests/test_proxy_responses.py (eight turns that each ran a build
with a 3,000-line log, ~1.9 MB), starts `ctxmill proxy` as its own process with its defaults
(latency budget 25 ms, 2 workers, a fresh home) in front of the fake upstream on 127.0.0.1, and
sends the identical request --requests times (streamed and plain replies alternating), --gap
seconds apart (0: back to back; a model answering takes seconds). For each request it prints the
bytes the upstream received as a share of the bytes sent and the proxy's round trip. --runs
repeats it with a new proxy each time (the first request of a session is a cold full run).
Run: python bench/proxy_responses.py [--runs 3 --requests 6 --gap 0]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_upstream import FakeUpstream, ServerThread  # noqa: E402
from tests.test_proxy_responses import codex_request  # noqa: E402


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _proxy(upstream: str, home: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(home / "xdg")}
    proc = subprocess.Popen([sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), "--home", str(home),
                             "--upstream-openai", upstream, "--log-level", "warning"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/ctxmill/stats", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the proxy did not start")


def one_run(fake: FakeUpstream, requests: int, gap: float) -> list[tuple[float, float]]:
    bodies = [orjson.dumps(codex_request(stream=stream)) for stream in (True, False)]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = _proxy(fake.url, Path(tmp))
        try:
            for k in range(requests):
                body = bodies[k % 2]
                started = time.perf_counter()
                r = httpx.post(url + "/v1/responses", content=body, timeout=120,
                               headers={"content-type": "application/json", "authorization": "Bearer sk-bench"})
                elapsed = time.perf_counter() - started
                if r.status_code != 200 or r.content != bytes(fake.sent[-1]):
                    raise SystemExit(f"request {k + 1}: {r.status_code}, reply not passed through")
                out.append((len(fake.received[-1].body) / len(body), elapsed))
                time.sleep(gap)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--requests", type=int, default=6)
    p.add_argument("--gap", type=float, default=0.0)
    args = p.parse_args()
    fake = FakeUpstream()
    with ServerThread(fake.app()) as server:
        fake.url = server.url
        size = len(orjson.dumps(codex_request()))
        print(f"request {size / 1e6:.2f} MB, {args.requests} identical requests per run, gap {args.gap:g} s")
        for run in range(min(args.runs, 10)):
            results = one_run(fake, min(args.requests, 20), args.gap)
            cells = "  ".join(f"{share:.3f} ({seconds * 1000:.0f} ms)" for share, seconds in results)
            print(f"run {run + 1}: upstream/sent per request: {cells}")


if __name__ == "__main__":
    main()
