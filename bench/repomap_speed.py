"""The repository map's cost in the UserPromptSubmit hook: `python bench/repomap_speed.py`.

Generates a git repository of N source files (default 5,000: Python, TypeScript and Go, 5-40
definitions each, in 250 packages), then times `python -m ctxmill hook UserPromptSubmit` as a
subprocess, end to end, each prompt another prompt and session (so the map is built each time):
- from the first prompt in the fresh repository on: no index yet, so the hook starts `ctxmill
  map --index` in the background and answers without a map; prompts follow back to back (while
  the index is built beside them) until one carries a map; it says how many prompts and seconds
  that took;
- with the map, warm (index complete; the hook still starts a background refresh when the index
  is older than 30 s, as it does for a user), each prompt also sent with the map turned off
  (`[map] enabled = false`) right before, so both see the same load;
- warm after the session edited one file (the prompt re-reads and re-parses it, as it does for
  the files a session touched);
- the map's own part of a warm hook (`ctxmill.prompt_map.prompt_map`, called in this process:
  opening the index, ranking, rendering, recording the last map), without process start.
Prints p50 / p95 / max wall-clock ms of each, and p95 over every prompt with the map enabled
from the first one on. Target: p95 <= 150 ms warm, first prompt included.
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
WORDS = (
    "parse token index cache store session hook memory check stream adapter request response retry "
    "budget marker expand pipeline stage epoch config install server client schema lock user order "
    "invoice payment report render route auth"
).split()


def generate(root: Path, files: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(files):
        pkg = f"pkg{i % 250:03d}"
        name = "_".join(rng.sample(WORDS, 2))
        kind = i % 3
        defs = rng.randint(5, 40)
        if kind == 0:
            body = "".join(
                f"def {name}_{j}(a, b=None):\n    return {rng.choice(WORDS)}_{j}(a)\n\n"
                for j in range(defs)
            )
            path = root / pkg / f"{name}_{i}.py"
        elif kind == 1:
            body = (
                f"export class {name.title().replace('_', '')}{i} {{\n"
                + "".join(
                    f"  {rng.choice(WORDS)}{j}(x: number): number {{ return x }}\n"
                    for j in range(defs)
                )
                + "}\n"
            )
            path = root / pkg / f"{name}_{i}.ts"
        else:
            body = "package m\n" + "".join(
                f"func {name.title().replace('_', '')}{j}(x int) int {{ return x }}\n"
                for j in range(defs)
            )
            path = root / pkg / f"{name}_{i}.go"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)


def hook(
    root: Path, env: dict[str, str], prompt: str, session: str, transcript: str = ""
) -> tuple[float, bool]:
    """(wall-clock ms, whether the answer carried a map)."""
    event = {
        "session_id": session,
        "transcript_path": transcript,
        "cwd": str(root),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "ctxmill", "hook", "UserPromptSubmit"],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        check=True,
    )
    return (time.perf_counter() - start) * 1000, "Repository map" in out.stdout


def in_process(root: Path, env: dict[str, str], prompts: list[str]) -> list[float]:
    """Milliseconds of `prompt_map` for each prompt (another session each), in this process."""
    os.environ.update(XDG_DATA_HOME=env["XDG_DATA_HOME"], HOME=env["HOME"])
    sys.path.insert(0, str(REPO))
    from ctxmill.prompt_map import prompt_map
    from ctxmill.settings import Settings

    out = []
    for i, prompt in enumerate(prompts):
        event = {"session_id": f"inside{i}", "transcript_path": "", "cwd": str(root)}
        start = time.perf_counter()
        text = prompt_map(event, prompt, Settings.load(root / ".ctxmill"))
        out.append((time.perf_counter() - start) * 1000)
        assert text, "no map"
    return out


def summary(name: str, times: list[float]) -> str:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    return (
        f"| {name} | {len(times)} | {statistics.median(times):.0f} | {p95:.0f} | {times[-1]:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--fresh-limit", type=float, default=300.0, help="seconds to wait for the first map"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        generate(root, args.files)
        env = {
            **os.environ,
            "XDG_DATA_HOME": str(Path(tmp) / "xdg"),
            "HOME": tmp,
            "PYTHONPATH": str(REPO),
        }
        prompts = [" ".join(random.Random(i).sample(WORDS, 4)) for i in range(args.runs)]
        (root / ".ctxmill").mkdir()
        config = root / ".ctxmill" / "config.toml"
        config.write_text("[map]\nenabled = false\n")
        hook(root, env, "warm up", "w")
        config.write_text("")
        fresh, started, mapped = [], time.perf_counter(), False
        while not mapped and time.perf_counter() - started < args.fresh_limit:
            ms, mapped = hook(
                root,
                env,
                " ".join(random.Random(len(fresh)).sample(WORDS, 4)),
                f"fresh{len(fresh)}",
            )
            fresh.append(ms)
        until_map = time.perf_counter() - started
        off, warm = [], []
        for i, p in enumerate(prompts):  # interleaved, so the machine's load weighs on both alike
            config.write_text("[map]\nenabled = false\n")
            off.append(hook(root, env, p, f"off{i}")[0])
            config.write_text("")
            warm.append(hook(root, env, p, f"warm{i}")[0])
        changed, sources = [], sorted(root.glob("pkg*/*.py"))
        for i, p in enumerate(prompts[:10]):
            target = sources[i * 7 % len(sources)]
            target.write_text(target.read_text() + f"\ndef added_{i}():\n    pass\n")
            transcript = (
                Path(tmp) / f"changed{i}.jsonl"
            )  # the session just edited it: the prompt re-reads it
            edit = {"type": "tool_use", "name": "Edit", "input": {"file_path": str(target)}}
            transcript.write_text(
                json.dumps({"message": {"role": "assistant", "content": [edit]}}) + "\n"
            )
            changed.append(hook(root, env, p, f"changed{i}", str(transcript))[0])
        inside = in_process(root, env, prompts)
        print(
            f"{args.files:,} files; prompts back to back; "
            "wall clock of `python -m ctxmill hook UserPromptSubmit`\n"
        )
        print("| hook | prompts | p50 ms | p95 ms | max ms |\n|---|---:|---:|---:|---:|")
        print(summary("without the map", off))
        print(
            summary(
                "from the first prompt until one carries a map (index built in the background)",
                fresh,
            )
        )
        print(summary("with the map, warm", warm))
        print(summary("with the map, the session just edited a file", changed))
        print(
            summary("every prompt with the map enabled, the first included", fresh + warm + changed)
        )
        print(summary("the map's own part of a warm hook (in process)", inside))
        print(
            f"\nthe first map came with prompt {len(fresh)}, "
            f"{until_map:.1f} s after the first prompt"
            + ("" if mapped else " (not yet: --fresh-limit reached)")
        )
        print(f"warm p50 / without: {statistics.median(warm) / statistics.median(off):.2f}x")


if __name__ == "__main__":
    main()
