"""What the local channel costs, side by side: `python bench/local_channel.py --baseline DIR`.

DIR is a source tree of the ctxmill to compare with (e.g. `git archive main | tar -x -C DIR`);
this tree is the other. For each it measures, in one run on this machine:
- session start: `always_on.ensure()` with nothing running (the hook's or MCP server's wait
  before the first request), cold, ROUNDS times, the trees alternating;
- per request: p50/p99 of requests the proxy forwards untouched (`MODES`: what the channel
  itself costs, no compression in it) through each tree's always-on proxy to one fake upstream,
  the trees' requests interleaved; and, for the option not taken, the same proxy served over TLS
  on loopback (a per-user certificate the client trusts);
- the prompt hook's wall time with the proxy up (its ownership check, then its own work);
- the ownership check of every session and prompt (`ctxmill.channel.problem`): from
  /proc/net/tcp (Linux) and from `lsof` (the path other systems take).
Prints a markdown table for docs/proxy.md.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 5
REQUESTS = 300
TLS_SERVER = """
import sys, uvicorn
sys.path.insert(0, sys.argv[1])
from ctxmill.proxy.app import create_app
from ctxmill.proxy.server import uvicorn_options
from ctxmill.proxy_config import ProxyConfig
from pathlib import Path
config = ProxyConfig(upstream_anthropic=sys.argv[3], upstream_openai=sys.argv[3], home=Path(sys.argv[4]))
uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning",
               ssl_certfile=sys.argv[5], ssl_keyfile=sys.argv[6], **uvicorn_options(config))).run()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tree: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CTXMILL_PROXY_AUTOSTART"}
    return {**env, "PYTHONPATH": str(tree), "XDG_DATA_HOME": str(home)}


def _in_tree(tree: Path, home: Path, code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], env=_env(tree, home), capture_output=True, text=True,
                          cwd=home,
                          timeout=120, check=True)
    return done.stdout.strip()


ENSURE = """
import sys, time
from pathlib import Path
from ctxmill import always_on
g = Path(sys.argv[1])
always_on.enable(g, "claude-code", int(sys.argv[2]))
started = time.perf_counter()
problem = always_on.ensure(g, wait=60)
print(time.perf_counter() - started if problem is None else f"ERROR {problem}")
"""
STOP = ("import sys; from pathlib import Path; from ctxmill import always_on; "
        "always_on.stop(int(sys.argv[2]), Path(sys.argv[1]))")


def _always_on(tree: Path, ghome: Path, upstream: str) -> tuple[int, float]:
    """Start `tree`'s always-on proxy in `ghome` (forwarding to `upstream`): (its port, the seconds
    `ensure` took)."""
    ghome.mkdir(parents=True)
    (ghome / "config.toml").write_text(f'[proxy]\nupstream_anthropic = "{upstream}"\n')
    port = _free_port()
    said = _in_tree(tree, ghome.parent, ENSURE, str(ghome), str(port))
    if said.startswith("ERROR"):
        _in_tree(tree, ghome.parent, STOP, str(ghome), str(port))
        raise SystemExit(f"{tree}: {said}")
    return port, float(said)


def session_start(trees: dict[str, Path], upstream: str, tmp: Path) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in trees}
    for i in range(ROUNDS):
        for name, tree in trees.items():
            ghome = tmp / f"start-{name}-{i}" / "ctxmill"
            port, seconds = _always_on(tree, ghome, upstream)
            _in_tree(tree, ghome.parent, STOP, str(ghome), str(port))
            times[name].append(seconds)
    return times


def _percentiles(samples: list[float]) -> tuple[float, float]:
    """(median, 99th percentile; the max for fewer than 100 samples), in ms."""
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


MODES = {  # label: (method, path, body bytes, a new connection each time)
    "GET, kept-alive": ("GET", "/v1/models", 0, False),
    "GET, new connection": ("GET", "/v1/models", 0, True),
    "POST 512 KB, kept-alive": ("POST", "/v1/files", 512 * 1024, False),
}
"""Requests the proxy forwards untouched (nothing to compress): what the channel itself costs."""


def per_request(targets: dict[str, tuple[str, str | None]]) -> dict[str, dict[str, tuple[float, float]]]:
    """{target: {mode: (p50 ms, p99 ms)}}, the targets' requests interleaved."""
    headers = {"x-api-key": "sk-ant-bench", "content-type": "application/octet-stream"}
    out: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in targets}
    for mode, (method, path, size, fresh) in MODES.items():
        body = os.urandom(size) if size else None
        kept = {name: httpx.Client(verify=ca or True, trust_env=False, timeout=60) for name, (_, ca) in targets.items()}
        samples: dict[str, list[float]] = {name: [] for name in targets}
        try:
            for i in range(REQUESTS + 10):
                for name, (url, ca) in targets.items():
                    client = httpx.Client(verify=ca or True, trust_env=False, timeout=60) if fresh else kept[name]
                    started = time.perf_counter()
                    reply = client.request(method, url + path, content=body, headers=headers)
                    elapsed = time.perf_counter() - started
                    if fresh:
                        client.close()
                    if reply.status_code != 200:
                        raise SystemExit(f"{name}: {reply.status_code} {reply.text[:200]}")
                    if i >= 10:  # warm-up
                        samples[name].append(elapsed)
        finally:
            for client in kept.values():
                client.close()
        for name in targets:
            out[name][mode] = _percentiles(samples[name])
    return out


HOOK = """
import json, subprocess, sys, time
event = json.dumps({"session_id": "s", "cwd": sys.argv[1], "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
started = time.perf_counter()
subprocess.run([sys.executable, "-m", "ctxmill", "hook", "UserPromptSubmit"], input=event, text=True,
               capture_output=True, check=True, cwd=sys.argv[1])
print(time.perf_counter() - started)
"""


def prompt_hook(running: dict[str, tuple[Path, Path, int]]) -> dict[str, tuple[float, float]]:
    """The prompt hook's wall time with each tree's always-on proxy up (its check, then its own work)."""
    samples: dict[str, list[float]] = {name: [] for name in running}
    for _ in range(ROUNDS * 2):
        for name, (tree, ghome, _port) in running.items():
            samples[name].append(float(_in_tree(tree, ghome.parent, HOOK, str(ghome.parent))))
    return {name: _percentiles(times) for name, times in samples.items()}


def ownership_check(port: int) -> dict[str, tuple[float, float]]:
    from ctxmill import channel

    out = {}
    for name, tables in (("/proc/net/tcp", channel.PROC_TABLES), ("lsof", ())):
        samples = []
        for _ in range(100):
            started = time.perf_counter()
            assert channel.problem(port, tables) is None
            samples.append(time.perf_counter() - started)
        out[name] = _percentiles(samples)
    return out


def _certificate(tmp: Path) -> tuple[Path, Path]:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def _wait_answering(url: str, ca: str | None) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/ctxmill/stats", verify=ca or True, trust_env=False, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} did not answer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="source tree of the ctxmill to compare with")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.fake_upstream import FakeUpstream, ServerThread

    trees = {"baseline": args.baseline.resolve(), "this tree": ROOT}
    fake = FakeUpstream()
    with tempfile.TemporaryDirectory() as tmp_name, ServerThread(fake.app()) as upstream:
        tmp = Path(tmp_name)
        started = session_start(trees, upstream.url, tmp)
        targets: dict[str, tuple[str, str | None]] = {}
        running: dict[str, tuple[Path, Path, int]] = {}
        try:
            for name, tree in trees.items():
                ghome = tmp / f"serve-{name}" / "ctxmill"
                port, _ = _always_on(tree, ghome, upstream.url)
                running[name] = (tree, ghome, port)
                targets[name] = (f"http://127.0.0.1:{port}", None)
            cert, key = _certificate(tmp)
            tls_port = _free_port()
            tls = subprocess.Popen([sys.executable, "-c", TLS_SERVER, str(ROOT), str(tls_port), upstream.url,
                                    str(tmp / "tls-home"), str(cert), str(key)], env=_env(ROOT, tmp))
            targets["this tree over TLS (not taken)"] = (f"https://127.0.0.1:{tls_port}", str(cert))
            _wait_answering(*targets["this tree over TLS (not taken)"])
            latency = per_request(targets)
            hooks = prompt_hook(running)
            checks = ownership_check(running["this tree"][2])
        finally:
            for tree, ghome, port in running.values():
                _in_tree(tree, ghome.parent, STOP, str(ghome), str(port))
            if "tls" in locals():
                tls.terminate()
                tls.wait(10)
    print("\n| | session start (ensure, cold): median / max | prompt hook, proxy up: p50 / max | "
          + " | ".join(f"{mode}: p50 / p99" for mode in MODES) + " |")
    print("|---|---:|---:|" + "---:|" * len(MODES))
    for name in targets:
        start, hook = started.get(name), hooks.get(name)
        cells = [f"{statistics.median(start):.2f} s / {max(start):.2f} s" if start else "–",
                 f"{hook[0]:.0f} / {hook[1]:.0f} ms" if hook else "–"]
        cells += [f"{latency[name][mode][0]:.2f} / {latency[name][mode][1]:.2f} ms" for mode in MODES]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\n| ownership check | p50 | p99 |\n|---|---:|---:|")
    for name, (p50, p99) in checks.items():
        print(f"| {name} | {p50:.2f} ms | {p99:.2f} ms |")
    print(f"\n{REQUESTS} requests per target and mode, {ROUNDS} cold starts per tree; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
