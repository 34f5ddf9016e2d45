"""The OpenCode plugin's cost per turn: `python bench/bench_engine.py [--turns N] [--output-lines L]`.

Starts `ctxmill engine` on a temporary socket (as the plugin does) and plays a growing OpenCode
session through `POST /opencode/transform`, the way the plugin sends it: each turn appends one step
(a bash call with an L-line output) and sends the whole projected history. Prints the round trip
(JSON encode, socket, pipeline run, edits back) p50 / p95 / max in ms, the first turn apart (the
session's first epoch), and the session's size at the end. Target: p50 <= 50 ms at ~100K tokens.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=60)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def step(n: int, lines: int) -> dict:
    output = "\n".join(f"[build {n}] compiling module_{i}.py ... ok ({i}/{lines})" for i in range(lines))
    return {"id": f"msg_a{n}", "role": "assistant", "parts": [
        {"type": "step-start"}, {"type": "text", "text": f"Step {n}: running the build.", "synthetic": False, "ignored": False},
        {"type": "tool", "callID": f"call_{n}", "tool": "bash", "status": "completed",
         "input": {"command": "sh build.sh", "description": f"build {n}"}, "output": output},
        {"type": "step-finish"}]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--output-lines", type=int, default=120)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctxmill-bench-engine-") as tmp:
        project = Path(tmp) / "proj"
        (project / ".git").mkdir(parents=True)
        sock = Path(tmp) / "run" / "engine.sock"
        env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(Path(tmp) / "data")}
        env.pop("CTXMILL_HOME", None)
        engine = subprocess.Popen([sys.executable, "-m", "ctxmill", "engine", "--socket", str(sock)], env=env)
        try:
            while not sock.exists():
                time.sleep(0.05)
            messages = [{"id": "msg_u0", "role": "user", "parts": [
                {"type": "text", "text": "The build fails; find out why.", "synthetic": False, "ignored": False}]}]
            times, size = [], 0
            for n in range(args.turns):
                messages.append(step(n, args.output_lines))
                started = time.perf_counter()
                body = json.dumps({"directory": str(project), "sessionID": "ses_bench", "messages": messages})
                conn = UnixConnection(str(sock))
                conn.request("POST", "/opencode/transform", body, {"content-type": "application/json"})
                answer = json.loads(conn.getresponse().read())
                times.append((time.perf_counter() - started) * 1000)
                size = len(body)
                summary = answer.get("summary", answer.get("error"))
            later = sorted(times[1:])
            print(f"first turn {times[0]:.1f} ms; later turns p50 {statistics.median(later):.1f} ms, "
                  f"p95 {later[int(0.95 * (len(later) - 1))]:.1f} ms, max {later[-1]:.1f} ms "
                  f"({args.turns} turns, last request {size / 1e6:.2f} MB: {summary})")
        finally:
            engine.terminate()
            engine.wait(timeout=10)


if __name__ == "__main__":
    main()
