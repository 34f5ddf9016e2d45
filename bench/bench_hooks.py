"""Hook latency, end to end including process start: `python bench/bench_hooks.py [--runs N]`.

Builds a 1,000-entry project memory in a temporary folder, warms the search index once (as the
first prompt of a session does), then runs `python -m ctxmill hook UserPromptSubmit` with an
English prompt, `hook SessionStart` (with a checkpoint present) and `hook PreToolUse` (an allowed
Write) N times each as subprocesses and prints p50 / p95 wall-clock milliseconds. Target: p50 <=
150 ms for the first two.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WORDS = ("parser tokenizer index cache sqlite bm25 session hook memory checkpoint compaction stream adapter "
         "request response retry timeout budget marker store expand grep pipeline stage tier epoch token "
         "jieba redact secret config install uninstall doctor server client schema migration lock").split()


def build_memory(home: Path, entries: int) -> None:
    from memory import api
    from memory.config import MemoryConfig

    cfg = MemoryConfig(home, home.parent / "global")
    rng = random.Random(7)
    types = ("decision", "constraint", "gotcha", "fact", "note")
    lines = ["# Memory", ""]
    for kind in types:
        lines += [f"## {kind.title()}s", ""]
        for i in range(entries // len(types)):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
            lines.append(f"- {text} <!-- m-{rng.getrandbits(32):08x} 2026-01-{1 + i % 28:02d}"
                         f"{' pinned' if i < 2 else ''} -->")
        lines.append("")
    home.mkdir(parents=True, exist_ok=True)
    (home / "MEMORY.md").write_text("\n".join(lines))
    (home / "checkpoint.md").write_text("# Checkpoint: session s\n\n## Task\n\nFix the parser.\n\n"
                                        "## Next steps\n\n- [ ] add tests\n\n## Critical context\n\n- none\n")
    assert api.reindex(cfg) == entries // len(types) * len(types)


def time_hook(event: str, payload: dict, env: dict, runs: int, injects: bool = True) -> list[float]:
    data = json.dumps(payload)
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "ctxmill", "hook", event], input=data, text=True,
                              capture_output=True, env=env, check=True)
        out.append((time.perf_counter() - start) * 1000)
        assert bool(done.stdout) == injects, f"{event} printed {done.stdout!r}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--entries", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / ".ctxmill"
        build_memory(home, args.entries)
        env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(home), "XDG_DATA_HOME": str(Path(tmp) / "xdg")}
        base = {"session_id": "s", "transcript_path": str(Path(tmp) / "t.jsonl"), "cwd": tmp}
        prompt = {**base, "hook_event_name": "UserPromptSubmit",
                  "prompt": "why does the tokenizer break the bm25 index when the session cache expires?"}
        time_hook("UserPromptSubmit", prompt, env, 1)  # warm-up: the first prompt of a session
        results = {
            "UserPromptSubmit": time_hook("UserPromptSubmit", prompt, env, args.runs),
            "SessionStart": time_hook("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"},
                                      env, args.runs),
            "PreToolUse": time_hook("PreToolUse", {**base, "hook_event_name": "PreToolUse", "tool_name": "Write",
                                                   "tool_input": {"file_path": "/src/app.py", "content": "x = 1\n" * 2000}},
                                    env, args.runs, injects=False),  # the common case: allowed, prints nothing
        }
        bare = time_hook_python(args.runs)
    print(f"{args.entries}-entry memory, {args.runs} runs each (wall clock incl. process start, ms)")
    print(f"  bare `python -c pass`        p50 {statistics.median(bare):6.1f}")
    for event, times in results.items():
        times.sort()
        print(f"  hook {event:<17} p50 {statistics.median(times):6.1f}   p95 {times[int(len(times) * 0.95) - 1]:6.1f}")


def time_hook_python(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        out.append((time.perf_counter() - start) * 1000)
    return out


if __name__ == "__main__":
    main()
