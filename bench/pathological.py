"""The full default pipeline on pathological tool outputs, each in its own subprocess.

Run: `python bench/pathological.py [--scale 1.0] [--timeout 600]`. Every case runs at half and
full size in a fresh process (on-disk CCR store, so redaction and the commit are included),
which reports wall time and peak RSS (resource.getrusage); the time ratio full/half is ~2 for
linear work (~4 would be quadratic). The numbers go to docs/reliability.md.
tests/reliability/test_pathological.py runs the same cases at about 1/100 of the size.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))


def request(output: str, tool_input: object = None) -> dict:
    """Four turns; the big output is in the first (every_stage() lets all stages see it)."""
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": tool_input or {"command": "cat big"}}
    return {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}]},
        {"role": "assistant", "content": "looked at it"}, {"role": "user", "content": "next"},
        {"role": "assistant", "content": "ok"}, {"role": "user", "content": "and now?"}]}


def big_output(n: int) -> dict:
    return request("".join(f"{i:08d} build step finished in {i % 97} ms\n" for i in range(n // 40)))


def log_lines(n: int) -> dict:
    return request("\n".join("ERROR: disk full" if i % 50_000 == 7 else f"12:00:{i % 60:02d} worker {i} ok"
                             for i in range(n)))


def single_line(n: int) -> dict:
    return request(("lorem ipsum dolor " * (n // 18 + 1))[:n])


def deep_json_text(n: int) -> dict:
    return request('{"a":' * n + "1" + "}" * n)


def deep_json_input(n: int) -> dict:
    nested: object = "leaf"
    for _ in range(n):
        nested = {"a": nested}
    return request("ok", {"command": "x", "spec": nested})


def array_items(n: int) -> dict:
    return request(json.dumps([{"id": i, "name": f"item{i}", "ok": i % 3 == 0} for i in range(n)]))


def binary_blob(n: int) -> dict:
    data = random.Random(1).randbytes(n)
    return request(data.decode("utf-8", "surrogateescape"))  # lone surrogates, as a raw reader gives them


def base64_blob(n: int) -> dict:
    return request(base64.b64encode(random.Random(2).randbytes(n * 3 // 4)).decode())


def ansi_storm(n: int) -> dict:
    unit = "\x1b[1;31mE\x1b[0m\x1b[2K\r\x1b[38;5;208m#\x1b[0m"
    return request(unit * (n // len(unit)))


def regex_hostile(n: int) -> dict:
    """Near-misses of every pattern the engine scans for: markers, notes, secrets, reminders."""
    pieces = ['[ctxmill: ', '<<ctxmill: ', ' · deep_expand("', "-----BEGIN RSA PRIVATE KEY-----", "password=",
              "<system-reminder>", "eyJ" + "a" * 30 + ".", "sk-" + "a" * 19, "x://a:", "a" * 200, " " * 200, "\\"]
    rng = random.Random(3)
    out, size = [], 0
    while size < n:
        piece = rng.choice(pieces)
        out.append(piece)
        size += len(piece)
    return request("".join(out))


CASES = {
    "100 MB tool output": (big_output, 100_000_000),
    "1M-line log": (log_lines, 1_000_000),
    "200K-char single line": (single_line, 200_000),
    "JSON text nested 100,000 deep": (deep_json_text, 100_000),
    "tool input nested 100,000 deep": (deep_json_input, 100_000),
    "JSON array of 1M items": (array_items, 1_000_000),
    "binary blob (10 MB)": (binary_blob, 10_000_000),
    "base64 blob (10 MB)": (base64_blob, 10_000_000),
    "ANSI escape storm (10 MB)": (ansi_storm, 10_000_000),
    "regex-hostile text (10 MB)": (regex_hostile, 10_000_000),
}


def every_stage():
    """Only the newest turn protected, high tier: every stage may work on the big output."""
    from compress.config import CompressConfig
    from compress.tiers import TierThresholds

    return CompressConfig(protect_tail_tokens=0, protect_tail_turns=1, tiers=TierThresholds(medium=1, high=1))


def child(case: str, size: int) -> None:
    """Build the input, run the pipeline once, print one JSON line of measurements."""
    sys.setrecursionlimit(10_000)
    from ccr.store import CCRStore
    from compress.runner.pipeline import run
    from compress.state.session import Session

    body = CASES[case][0](size)
    with tempfile.TemporaryDirectory() as folder, CCRStore(Path(folder)) as store:
        started = time.perf_counter()
        result = run(body, session=Session.memory(), store=store, config=every_stage())
        seconds = time.perf_counter() - started
    report = result.report
    print(json.dumps({"case": case, "size": size, "seconds": round(seconds, 3),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "tokens_before": report.tokens_before, "tokens_after": report.tokens_after,
                      "error": report.error, "passed_through": result.body is body}))


def measure(case: str, size: int, timeout: float) -> dict:
    """Run one case in a fresh interpreter; {'error': 'timeout'} if it does not finish in time."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run([sys.executable, __file__, "--child", case, str(size)], capture_output=True,
                              text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"case": case, "size": size, "crashed": f"timeout after {timeout:.0f} s"}
    if done.returncode:
        return {"case": case, "size": size, "crashed": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--child", nargs=2, metavar=("CASE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    print("| input | size | time | time at half size | ratio | peak RSS | tokens before → after | outcome |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for case, (_, full) in CASES.items():
        size = int(full * args.scale)
        half, whole = measure(case, size // 2, args.timeout), measure(case, size, args.timeout)
        if "crashed" in whole or "crashed" in half:
            print(f"| {case} | {size:,} | | | | | | CRASH: {whole.get('crashed') or half.get('crashed')} |")
            continue
        ratio = whole["seconds"] / max(half["seconds"], 1e-6)
        outcome = f"passed through: {whole['error']}" if whole["error"] else (
            "unchanged" if whole["passed_through"] else "compressed")
        print(f"| {case} | {size:,} | {whole['seconds']:.2f} s | {half['seconds']:.2f} s | {ratio:.1f} |"
              f" {whole['peak_rss_mb']:,.0f} MB | {whole['tokens_before']:,} → {whole['tokens_after']:,} | {outcome} |",
              flush=True)


if __name__ == "__main__":
    main()
