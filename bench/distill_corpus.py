"""How `ctxmill distill` fares on the corpus: `python bench/distill_corpus.py [--corpus DIR] [--limit N]`.

Reads every session of the corpus (each format folder is a kind: claude-code, codex, …), turns
its tool calls into steps (`memory.history`), takes each session's first prompt as its task and
mines candidates (`memory.distill.mine`) per kind and over all sessions, with and without
`allow_risky`. Reported per row: sessions, distinct tasks, candidates, their steps, steps that
cannot be undone or carry a credential among the proposed (`memory.skill_file.risk`; must be 0
without the flag), those the skill warns about (with the flag: all of them), name collisions
(must be 0), and example commands that still hold a user's home folder (must be 0).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.formats.sessions import UnknownFormat, read_session, session_files  # noqa: E402
from memory.checkpoint import session_id_for  # noqa: E402
from memory.distill import mine, steps_of_rows, task_of_rows  # noqa: E402
from memory.history.messages import rows_of  # noqa: E402
from memory.skill_file import render, risk  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
HOME = re.compile(r"/Users/[^/<~\s]+|/home/[^/<~\s]+|[A-Za-z]:\\\\Users\\\\")


def row(name: str, sequences: dict, tasks: dict, limit: int, allow: bool) -> str:
    found = mine(sequences, limit=limit, tasks=tasks, allow_risky=allow)
    risky = sum(1 for c in found for s, e in zip(c.steps, c.examples, strict=True) if risk(s, e))
    texts = [render(c) for c in found]
    warned = sum(t.count("**Warning:") for t in texts)
    homes = sum(len(HOME.findall(t)) for t in texts)
    names = [c.name for c in found]
    return (
        f"| {name}{' (--allow-risky)' if allow else ''} | {len(sequences)} | {len(set(tasks.values()))} | "
        f"{len(found)} | {sum(len(c.steps) for c in found)} | {risky} | {warned} | "
        f"{len(names) - len(set(names))} | {homes} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=50)
    args = parser.parse_args()
    folder = args.corpus / "transcripts"
    if not folder.is_dir():
        sys.exit(f"corpus absent at {args.corpus}")
    kinds: dict[str, tuple[dict, dict]] = {}
    for path in session_files(folder):
        try:
            rows = rows_of(read_session(path))
        except (OSError, UnknownFormat):
            continue
        seqs, tasks = kinds.setdefault(path.parent.name, ({}, {}))
        key = session_id_for(path)
        seqs[key], tasks[key] = steps_of_rows(rows), task_of_rows(rows) or key
    print(
        "| sessions | count | tasks | candidates | steps | irreversible or credential steps proposed | "
        "warned | name collisions | home paths |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    every: tuple[dict, dict] = ({}, {})
    for kind, (seqs, tasks) in sorted(kinds.items()):
        every[0].update(seqs)
        every[1].update(tasks)
        print(row(kind, seqs, tasks, args.limit, False))
    print(row("all", *every, args.limit, False))
    print(row("all", *every, args.limit, True))


if __name__ == "__main__":
    main()
