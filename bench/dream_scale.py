"""Dream's time on large memories, printed as a markdown table.

    python bench/dream_scale.py [--sizes 2000,8000,12000,20000] [--notes-share 0.25]

Each size is a project whose MEMORY.md and notes.md hold that many entries together (notes.md
the given share): generated decisions, facts, gotchas and notes about a few hundred components,
with reworded twins (which merge), "instead of" decisions (which supersede the decision they
name) and checkpoint leftovers (fragments, narration, host-generic errors, other machines'
paths) among the notes. Reported per size: `memory.dream.dream` wall time (the whole run: read,
parse, consolidate, archive, write), what it merged, superseded and left out, and a dry run's
time; wall and CPU seconds (the CPU time of this process: on a busy machine the wall time also
counts waiting for a core). Target: 20,000 entries in at most 2 s.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory.config import MemoryConfig  # noqa: E402
from memory.dream import dream  # noqa: E402
from memory.entry import SECTIONS, Entry  # noqa: E402
from memory.markdown import format_entry  # noqa: E402

THINGS = ["PostgreSQL", "SQLite", "Redis", "Kafka", "httpx", "requests", "uv", "poetry", "pytest", "tox", "nginx",
          "Caddy", "Celery", "Dramatiq", "FastAPI", "Flask", "React", "Svelte", "Terraform", "Pulumi"]
ROLES = ["database", "cache", "queue", "HTTP client", "installer", "test runner", "proxy", "task queue", "web framework",
         "frontend", "infrastructure tool"]
VERBS = ["retries", "times out", "logs", "batches", "streams", "validates", "signs", "compresses"]


def _component(rng: random.Random) -> str:
    return f"{rng.choice(['billing', 'search', 'auth', 'export', 'ingest', 'report', 'admin'])}-{rng.randrange(60)}"


def _entry(rng: random.Random, i: int) -> tuple[str, str]:
    comp, thing, role = _component(rng), rng.choice(THINGS), rng.choice(ROLES)
    kind = rng.random()
    if kind < 0.3:
        return "decision", f"Use {thing} as the {role} for the {comp} service."
    if kind < 0.4:
        return "decision", f"Use {rng.choice(THINGS)} instead of {thing} as the {role} for the {comp} service."
    if kind < 0.65:
        return "fact", f"The {comp} worker {rng.choice(VERBS)} {rng.randrange(2, 90)} items per batch in step {i}."
    if kind < 0.85:
        return "gotcha", (f"`{thing} error {rng.randrange(100, 999)} in {comp}` → fixed by setting "
                          f"{comp.upper().replace('-', '_')}_TIMEOUT={rng.randrange(5, 120)}")
    return "note", f"The {comp} dashboard shows {role} lag for {thing} in panel {rng.randrange(40)}."


LEFTOVERS = ["Let me check the config first.", "and then the", "`command not found: jq` → fixed by apt install jq",
             "The fixture lives in /Users/someone/work/app/tests/data.json.", "Now I'll run the tests again."]


def build(root: Path, size: int, notes_share: float, seed: int = 7) -> MemoryConfig:
    rng = random.Random(seed)
    home = root / ".ctxmill"
    home.mkdir(parents=True)
    memory: dict[str, list[str]] = {kind: [] for kind in SECTIONS}
    notes: list[str] = []
    n_notes = int(size * notes_share)
    for i in range(size):
        kind, text = _entry(rng, i)
        if i % 11 == 0:
            text = text.replace("The ", "the ", 1).rstrip(".") + ", as measured."  # a reworded twin follows
        if i >= size - n_notes and i % 13 == 0:
            kind, text = "note", rng.choice(LEFTOVERS) + f" ({i})" * (i % 2)
        line = format_entry(Entry(f"m-{i:08x}", kind, text, f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}"))
        (notes.append(line) if i >= size - n_notes else memory[kind].append(line))
    (home / "MEMORY.md").write_text("# Memory\n" + "".join(f"\n## {SECTIONS[k]}\n\n" + "".join(v)
                                                          for k, v in memory.items() if v))
    (home / "notes.md").write_text("## Notes\n\n" + "".join(notes))
    return MemoryConfig(project_home=home, global_home=root / "global", cache_dir=root / "cache")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,8000,12000,20000")
    parser.add_argument("--notes-share", type=float, default=0.25)
    args = parser.parse_args()
    print("| entries | dream s (CPU s) | dry run s | before -> after | merged | superseded | left out |")
    print("|---:|---:|---:|---|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = build(Path(tmp) / "p", size, args.notes_share)
            from memory import api
            api.tokenizer(cfg)  # the jieba cache is built once per machine, not per run
            start = time.perf_counter()
            dry = dream(cfg, dry_run=True)
            dry_s = time.perf_counter() - start
            start, cpu = time.perf_counter(), time.process_time()
            result = dream(cfg)
            took, cpu = time.perf_counter() - start, time.process_time() - cpu
            assert dry.added == result.added and dry.removed == result.removed
            print(f"| {size:,} | {took:.2f} ({cpu:.2f}) | {dry_s:.2f} | {result.before:,} -> {result.after:,} | {result.merged:,} "
                  f"| {result.superseded:,} | {result.left_out:,} |", flush=True)


if __name__ == "__main__":
    main()
