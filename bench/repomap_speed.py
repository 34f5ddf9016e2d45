"""Repository-map cost in the UserPromptSubmit hook: `python bench/repomap_speed.py [--files N] [--runs N]`.

Generates a git repository of N source files (default 5,000: Python, TypeScript and Go, 5-40
definitions each, in 250 packages), then times `python -m ctxmill hook UserPromptSubmit` as a
subprocess, end to end:
- without the map (`[map] enabled = false`): today's hook;
- the first map (cold: `ctxmill map`, every file parsed and indexed; a hook spreads this over
  its first prompts, `INDEX_SECONDS` each, and gives no map until the index is complete);
- with the map, warm (index complete, nothing changed), each run with another prompt and session
  so the map is built and injected every time;
- warm after one file changed (that file is re-read and re-parsed).
Prints p50 / p95 wall-clock ms of each. Target: warm p50 <= 2 x the hook without the map.
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
WORDS = ("parse token index cache store session hook memory check stream adapter request response retry "
         "budget marker expand pipeline stage epoch config install server client schema lock user order "
         "invoice payment report render route auth").split()


def generate(root: Path, files: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(files):
        pkg = f"pkg{i % 250:03d}"
        name = "_".join(rng.sample(WORDS, 2))
        kind = i % 3
        defs = rng.randint(5, 40)
        if kind == 0:
            body = "".join(f"def {name}_{j}(a, b=None):\n    return {rng.choice(WORDS)}_{j}(a)\n\n" for j in range(defs))
            path = root / pkg / f"{name}_{i}.py"
        elif kind == 1:
            body = f"export class {name.title().replace('_', '')}{i} {{\n" + "".join(
                f"  {rng.choice(WORDS)}{j}(x: number): number {{ return x }}\n" for j in range(defs)) + "}\n"
            path = root / pkg / f"{name}_{i}.ts"
        else:
            body = "package m\n" + "".join(f"func {name.title().replace('_', '')}{j}(x int) int {{ return x }}\n"
                                           for j in range(defs))
            path = root / pkg / f"{name}_{i}.go"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)


def hook(root: Path, env: dict[str, str], prompt: str, session: str) -> float:
    event = {"session_id": session, "transcript_path": "", "cwd": str(root), "hook_event_name": "UserPromptSubmit",
             "prompt": prompt}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "ctxmill", "hook", "UserPromptSubmit"], input=json.dumps(event),
                         capture_output=True, text=True, cwd=root, env=env, check=True)
    elapsed = (time.perf_counter() - start) * 1000
    assert out.returncode == 0
    return elapsed


def summary(name: str, times: list[float]) -> str:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    return f"{name:<34} p50 {statistics.median(times):7.1f} ms   p95 {p95:7.1f} ms   (n={len(times)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        generate(root, args.files)
        env = {**os.environ, "XDG_DATA_HOME": str(Path(tmp) / "xdg"), "HOME": tmp,
               "PYTHONPATH": str(REPO)}
        prompts = [" ".join(random.Random(i).sample(WORDS, 4)) for i in range(args.runs)]
        (root / ".ctxmill").mkdir()
        config = root / ".ctxmill" / "config.toml"
        config.write_text("[map]\nenabled = false\n")
        hook(root, env, "warm up", "w")
        off = [hook(root, env, p, f"off{i}") for i, p in enumerate(prompts)]
        config.write_text("")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ctxmill", "map", "--root", str(root), "parse invoice"],
                       capture_output=True, cwd=root, env=env, check=True)
        cold = [(time.perf_counter() - start) * 1000]
        warm = [hook(root, env, p, f"warm{i}") for i, p in enumerate(prompts)]
        changed = []
        for i, p in enumerate(prompts[:5]):
            target = next(root.glob(f"pkg{i:03d}/*.py"))
            target.write_text(target.read_text() + f"\ndef added_{i}():\n    pass\n")
            changed.append(hook(root, env, p, f"changed{i}"))
        print(f"{args.files:,} files")
        print(summary("hook without the map", off))
        print(summary("first map (cold, every file parsed)", cold))
        print(summary("hook with the map (warm)", warm))
        print(summary("hook with the map, one file changed", changed))
        ratio = statistics.median(warm) / statistics.median(off)
        print(f"warm / without: {ratio:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
