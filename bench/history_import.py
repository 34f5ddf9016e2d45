"""Importing one long session into history: `python bench/history_import.py [MB] [--budget MB]`.

Writes a Claude Code transcript of about MB megabytes (default 248, the red team's size) whose
turns look like real ones (a prompt, a command, its output: most a few kilobytes, one in twenty
hundreds), puts two small sessions in a fresh history store first, then runs `ctxmill import` on
the long one in a child process and prints its wall time, its peak memory (the child's maximum
resident set), what it said and which sessions the store holds afterwards. `--budget MB` sets
`[history] max_mb` in the user's config (default: the store's default, 256). Run it niced, one
run side by side with the other build (`--repo DIR` runs that checkout's ctxmill).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_transcript(
    path: Path, megabytes: float, session: str = "long-session", seed: int = 7
) -> int:
    """A linear Claude Code session of about `megabytes` MB at `path`; the number of lines."""
    rng = random.Random(seed)
    words = (
        "build",
        "parser",
        "index",
        "the",
        "test",
        "failed",
        "cache",
        "token",
        "error",
        "line",
        "value",
        "module",
        "import",
        "return",
        "config",
        "retry",
        "socket",
        "format",
        "session",
        "memory",
    )
    n, written, parent = 0, 0, None
    with open(path, "w") as out:

        def emit(role: str, content) -> None:
            nonlocal n, written, parent
            uuid = f"{session}-{n}"
            record = {
                "type": role,
                "uuid": uuid,
                "parentUuid": parent,
                "sessionId": session,
                "cwd": "/work/proj",
                "message": {
                    "role": role,
                    "content": content,
                    **({"id": f"m{n}"} if role == "assistant" else {}),
                },
            }
            data = json.dumps(record) + "\n"
            out.write(data)
            written += len(data)
            n, parent = n + 1, uuid

        turn = 0
        while written < megabytes * 2**20:
            size = (
                rng.choice([800, 1500, 3000, 6000])
                if rng.random() > 0.05
                else rng.randint(50_000, 400_000)
            )
            output = " ".join(
                rng.choice(words) + str(rng.randint(0, 999)) for _ in range(size // 8)
            )
            emit("user", f"Step {turn}: fix the {rng.choice(words)} in module {turn % 37}")
            emit(
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "id": f"t{turn}",
                        "name": "Bash",
                        "input": {"command": f"make test-{turn % 11}"},
                    }
                ],
            )
            emit("user", [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": output}])
            emit(
                "assistant",
                [
                    {
                        "type": "text",
                        "text": f"The {rng.choice(words)} is fixed; next step {turn + 1}.",
                    }
                ],
            )
            turn += 1
    return n


PEAK = """
import resource, runpy, sys
sys.argv = ["ctxmill", *sys.argv[1:]]
try:
    runpy.run_module("ctxmill", run_name="__main__")
finally:
    who = (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    peak = max(resource.getrusage(w).ru_maxrss for w in who)
    print(f"PEAK {peak}", file=sys.stderr)
"""


def run(
    repo: Path, args: list[str], env: dict, cwd: Path
) -> tuple[subprocess.CompletedProcess, float, float]:
    """`ctxmill ARGS` from `repo`: the result (its PEAK line taken out), the wall seconds and
    the process's peak resident set in MB."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(repo)},
    )
    seconds = time.monotonic() - started
    lines = done.stderr.splitlines()
    peak = next((int(x.split()[1]) / 1024 for x in lines if x.startswith("PEAK ")), float("nan"))
    done.stderr = "\n".join(x for x in lines if not x.startswith("PEAK "))
    return done, seconds, peak


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("megabytes", type=float, nargs="?", default=248)
    parser.add_argument(
        "--budget", type=float, help="[history] max_mb (default: the store's default)"
    )
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout whose ctxmill runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "proj" / ".git").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXMILL_", "XDG_"))}
        env.update(HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "data"))
        if args.budget:
            (tmp_path / "data" / "ctxmill").mkdir(parents=True)
            (tmp_path / "data" / "ctxmill" / "config.toml").write_text(
                f"[history]\nmax_mb = {args.budget}\n"
            )
        for name in ("first-small", "second-small"):
            write_transcript(tmp_path / f"{name}.jsonl", 0.05, name)
            run(args.repo, ["import", str(tmp_path / f"{name}.jsonl")], env, tmp_path / "proj")
        long = tmp_path / "long-session.jsonl"
        lines = write_transcript(long, args.megabytes)
        os.utime(long, (1e9, 1e9))  # recorded long ago: the oldest session in the store
        done, seconds, peak = run(args.repo, ["import", str(long)], env, tmp_path / "proj")
        listed, _, _ = run(args.repo, ["history", "list"], env, tmp_path / "proj")
        print(
            f"{long.stat().st_size / 2**20:.0f} MB, {lines:,} lines: exit {done.returncode}, "
            f"{seconds:.1f} s, peak RSS {peak:.0f} MB"
        )
        print("said:", (done.stdout + done.stderr).strip().replace(str(tmp_path), "…"))
        print(
            "kept:", ", ".join(line.split()[0] for line in listed.stdout.splitlines()) or "nothing"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
