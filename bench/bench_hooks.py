"""Hook latency, end to end including process start: `python bench/bench_hooks.py [--runs N] [--against
DIR]`. Builds a 1,000-entry project memory in a temporary folder, warms the search index once (as
the first prompt of a session does), then runs `python -m ctxmill hook UserPromptSubmit` with an
English prompt, `hook SessionStart` (with a checkpoint present, a new session each run), `hook
PreToolUse` (an allowed Write), the first prompt in a repository (no map index yet) and `ctxmill
--version` N times each as subprocesses, interleaved with the floor (`python -c pass`, started the
same way: same environment, pipes and input), and prints p50 / p95 wall-clock milliseconds and the
p50 as a ratio to the floor's, so the figures read the same on any machine. The hook is timed until
it exits (what the host waits for); what it leaves running detached (SessionStart's consolidation,
the first prompt's map index) is waited for before the next timing, so it slows none, and its CPU is
shown apart ("detached"). `--against DIR`: the same, side by side, for the ctxmill checkout in DIR
(another branch, for a before / after). Each checkout's packages are compiled to `.pyc` first, as
`ctxmill install` does (a machine with PYTHONDONTWRITEBYTECODE set would otherwise time hooks that
compile every module they import, 25-35% slower). Targets on a quiet machine: UserPromptSubmit <= 50
ms, SessionStart <= 60 ms, PreToolUse <= 25 ms (python alone: 18 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIRST = "first prompt in a repository"
"""UserPromptSubmit where the repository has no map index yet (a fresh cache folder each run): it
answers without a map while a detached `ctxmill map --index` builds it."""
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


def _cpu() -> float:
    """CPU seconds (user + system) of the child processes waited for so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux's child subreaper), so what
    a hook leaves running detached (SessionStart's consolidation, the first prompt's map index) is
    waited for before the next timing, never slowing it, and its CPU is counted apart. False where
    the system has no such thing: then detached work may overlap the next timings."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_detached() -> float:
    """Wait for every descendant still running (adopted: `adopt_orphans`); the CPU ms they used."""
    cpu = _cpu()
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return (_cpu() - cpu) * 1000


def time_hook(event: str, payload: dict | None, env: dict, injects: bool = True) -> tuple[float, float, float]:
    """One run of `hook EVENT` (or, with no payload, `ctxmill --version`): (wall-clock ms to
    exit, CPU ms of the process and the children it waited for, CPU ms of the work it left
    running detached, waited for here once it has exited)."""
    args = ["-m", "ctxmill", "hook", event] if payload is not None else ["-m", "ctxmill", "--version"]
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run([sys.executable, *args], input=json.dumps(payload) if payload else "", text=True,
                          capture_output=True, env=env, check=True, cwd=env["CTXMILL_HOME"])  # not a checkout
    ms = (time.perf_counter() - start) * 1000
    assert bool(done.stdout) == injects, f"{event} printed {done.stdout!r}"
    used = (_cpu() - cpu) * 1000
    return ms, used, reap_detached()


def time_python(env: dict) -> tuple[float, float]:
    """The floor, `python -c pass`, started as the hooks are (same environment, folder, pipes and
    input read), so the ratios count what the hook's process does and nothing of the harness."""
    start, cpu = time.perf_counter(), _cpu()
    subprocess.run([sys.executable, "-c", "pass"], input="", text=True, capture_output=True, env=env, check=True,
                   cwd=env["CTXMILL_HOME"])
    return (time.perf_counter() - start) * 1000, (_cpu() - cpu) * 1000


def compile_packages(root: Path) -> None:
    """The `.pyc` files of the checkout's packages (`ctxmill.commands.install.PACKAGES`), as an
    installed ctxmill has them."""
    import compileall

    from ctxmill.commands.install import PACKAGES

    for name in PACKAGES:
        if (root / name).is_dir():
            compileall.compile_dir(str(root / name), quiet=2, workers=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--against", type=Path, help="another ctxmill checkout, timed side by side")
    args = parser.parse_args()
    roots = {"this": REPO, **({"against": args.against.resolve()} if args.against else {})}
    for root in roots.values():
        compile_packages(root)
    adopted = adopt_orphans()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / ".ctxmill"
        build_memory(home, args.entries)
        base = {"session_id": "s", "transcript_path": str(Path(tmp) / "t.jsonl"), "cwd": tmp}
        prompt = {**base, "hook_event_name": "UserPromptSubmit", "prompt":
                  "why does the tokenizer break the bm25 index when the session cache expires?"}
        events = {  # label: (event, payload, whether it prints, with a cache folder of its own each run,
            # a new session each run: SessionStart starts one, so it records the session's transcript)
            "UserPromptSubmit": ("UserPromptSubmit", prompt, True, False, False),
            FIRST: ("UserPromptSubmit", prompt, True, True, False),  # no map index yet: the map is left out
            "SessionStart": ("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}, True,
                             False, True),
            "PreToolUse": ("PreToolUse", {**base, "hook_event_name": "PreToolUse", "tool_name": "Write",  # allowed
                                          "tool_input": {"file_path": "/src/app.py", "content": "x = 1\n" * 2000}},
                           False, False, False),
            "--version": ("--version", None, True, False, False),
        }
        envs = {name: {**os.environ, "PYTHONPATH": str(root), "CTXMILL_HOME": str(home),
                       "XDG_DATA_HOME": str(Path(tmp) / "xdg")} for name, root in roots.items()}
        for env in envs.values():  # warm-up: the first prompt of a session builds the memory's search index
            time_hook("UserPromptSubmit", prompt, env)
        times: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        floor: list[tuple[float, float]] = []
        for run in range(args.runs):  # interleaved, so a burst of load hits every column alike
            floor.append(time_python(envs["this"]))
            for name, env in envs.items():
                for label, (event, payload, injects, fresh, new_session) in events.items():
                    own = {**env, "XDG_DATA_HOME": str(Path(tmp) / f"xdg-{name}-{run}")} if fresh else env
                    if new_session:
                        payload = {**payload, "session_id": f"{name}-{run}",
                                   "transcript_path": str(Path(tmp) / f"t-{name}-{run}.jsonl")}
                    times.setdefault((name, label), []).append(time_hook(event, payload, own, injects))
    bare, bare_cpu = (statistics.median(x[i] for x in floor) for i in (0, 1))
    print(f"{args.entries}-entry memory, {args.runs} runs each: wall clock to exit incl. process start and CPU "
          "(ms; × the floor's); detached: CPU of what the hook left running after it exited" +
          ("" if adopted else " (not waited for: it may overlap the next timings)"))
    print(f"  {'floor `python -c pass`':<40} p50 {bare:6.1f}            CPU p50 {bare_cpu:6.1f}")
    for (name, event), runs in times.items():
        wall, cpu, left = sorted(r[0] for r in runs), *(statistics.median(r[i] for r in runs) for i in (1, 2))
        label = f"{event} ({name})" if len(roots) > 1 else event
        print(f"  {label:<40} p50 {statistics.median(wall):6.1f} ({statistics.median(wall) / bare:4.1f}×)"
              f"   CPU p50 {cpu:6.1f} ({cpu / bare_cpu:4.1f}×)   p95 {wall[int(len(wall) * 0.95) - 1]:6.1f}"
              f"   detached CPU p50 {left:6.1f}")


if __name__ == "__main__":
    main()
