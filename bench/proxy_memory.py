"""Memory of a real `ctxmill proxy` under concurrent large bodies, and after.

    python bench/proxy_memory.py [--bodies 8] [--mb 60] [--after 5,30,60] [proxy flags…]

Starts the fake upstream and `ctxmill proxy` (its own home in a temp folder), sends N bodies of
M MB at once (each a conversation whose last tool result is M MB of build output), and prints
the resident memory (RSS, summed over the proxy, its forkserver and its workers): idle, peak
while the bodies are in flight, and some seconds after the last answer.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    out = [pid]
    for child in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split():
        out += descendants(int(child))
    return out


def rss_mb(pid: int) -> dict[int, int]:
    """RSS in MB of `pid` and every process below it."""
    sizes = {}
    for p in descendants(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    sizes[p] = int(line.split()[1]) // 1024
        except OSError:
            pass
    return sizes


def body(i: int, mb: float) -> bytes:
    line = f"line of build output {i} that repeats\n"
    big = line * int(mb * 2**20 // len(line))
    return orjson.dumps({"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": f"build it ({i})"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                           "input": {"command": "make"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": big}]}]})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bodies", type=int, default=8)
    p.add_argument("--mb", type=float, default=60)
    p.add_argument("--after", default="5,30,60", help="seconds after the last answer to measure at")
    args, proxy_flags = p.parse_known_args()
    up, port = free_port(), free_port()
    home = tempfile.mkdtemp(prefix="ctxmill-mem-")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    fake = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fake_upstream.py"), "--port", str(up)], env=env)
    proxy = subprocess.Popen([sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), "--home", home,
                              "--upstream-anthropic", f"http://127.0.0.1:{up}", "--log-level", "warning",
                              "--max-body-mb", str(args.mb + 4), *proxy_flags], env=env, cwd=home)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                httpx.get(url + "/ctxmill/stats", timeout=5)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        time.sleep(1)
        print(f"idle: {sum(rss_mb(proxy.pid).values())} MB")
        bodies = [body(i, args.mb) for i in range(args.bodies)]
        peak, done = [0], threading.Event()

        def watch() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], sum(rss_mb(proxy.pid).values()))
                time.sleep(0.05)

        statuses: list = []

        def send(data: bytes) -> None:
            try:
                statuses.append(httpx.post(url + "/v1/messages", content=data, timeout=600).status_code)
            except httpx.HTTPError as exc:
                statuses.append(type(exc).__name__)

        watcher = threading.Thread(target=watch)
        watcher.start()
        began = time.monotonic()
        senders = [threading.Thread(target=send, args=(b,)) for b in bodies]
        for t in senders:
            t.start()
        for t in senders:
            t.join()
        took = time.monotonic() - began
        done.set()
        watcher.join()
        del bodies
        print(f"{args.bodies} × {args.mb:g} MB at once: answers {sorted(map(str, statuses))} in {took:.1f} s; "
              f"peak {peak[0]} MB")
        print("in flight:", httpx.get(url + "/ctxmill/stats", timeout=30).json().get("inflight"))
        waited = 0.0
        for at in (float(a) for a in args.after.split(",")):
            time.sleep(max(0.0, at - waited))
            waited = at
            sizes = rss_mb(proxy.pid)
            print(f"{at:g} s after: {sum(sizes.values())} MB (proxy {sizes.get(proxy.pid)} MB, "
                  f"others {sorted(v for k, v in sizes.items() if k != proxy.pid)})")
    finally:
        proxy.terminate()
        fake.terminate()
        proxy.wait(timeout=60)
        fake.wait(timeout=60)


if __name__ == "__main__":
    main()
