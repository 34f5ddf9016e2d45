"""How many of the files the agent then read or edited each map named, on the corpus's repositories.

    python bench/repomap_corpus.py [--corpus DIR] [--mirrors DIR] [--budget 512] [--aider PYTHON]

The corpus holds transcripts, not repositories: each session's repository is its project's
public repository (clone it as `<mirrors>/OWNER+REPO/repo`, a git directory with its history;
projects without one are left out), checked out at each prompt's commit
(bench/repomap_sessions.py says how prompts, commits and targets are found). At each prompt
these maps are made with the same budget and the same token estimate
(`compress.token_counters.estimate_tokens`):
- ctxmill: `repomap` as the hook makes it, given the prompt and the files touched before it;
- ctxmill, no recent: the prompt alone;
- path list: every file's path, largest first, one a line (names only);
- largest source files: the code files with their definitions, largest first;
- aider (`--aider`: the python of a virtual environment with aider-chat installed;
  bench/aider_map.py runs there, and says how): aider's `RepoMap` asked as aider's coder asks,
  with the files the prompt names in the chat (they count as named: aider puts them before the
  model whole) and the prompt's mentioned files and identifiers; the same map with no chat
  files; and the harness this bench used before (no chat files, no fallback).
A prompt's measure is the share of its targets a map names; reported pooled over all targets
and as the mean over prompts, overall and per project. The ranking's prior weights (PageRank,
size) and the graph step (the map's one step, none, or a personalised PageRank by local push of
bench/repomap_walk.py with its weights) are chosen on the corpus two ways: in-sample (best on all
projects) and leave-one-project-out (chosen on the other projects, scored on the one left out).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import repomap_walk  # noqa: E402
from repomap_sessions import checkout, mirror_of, prompts  # noqa: E402

from compress.formats.sessions import session_files  # noqa: E402
from compress.token_counters import estimate_tokens  # noqa: E402
from repomap import rank as ranking  # noqa: E402
from repomap.index import RepoIndex  # noqa: E402
from repomap.render import file_lines, render  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
PRIOR_GRID = (0.0, 0.5, 1.0, 2.0)
SIZE_GRID = (0.0, 0.25, 0.5, 1.0, 2.0)
STEPS = ("spread", "none", *repomap_walk.GRID)
"""The graph steps compared: the map's (`rank.spread`), none, each walk of bench/repomap_walk.py."""
AIDER = {
    "coder": "aider, the prompt's files in the chat",
    "map": "aider, the map alone",
    "before": "aider, the harness before",
}
FIXED = ("ctxmill", "ctxmill, no recent", "path list", "largest source files", *AIDER.values())


def _fit_lines(lines: list[str], budget: int) -> list[int]:
    """Indices of `lines` kept, in order, while their text fits `budget`."""
    kept, used = [], 0
    for i, line in enumerate(lines):
        cost = estimate_tokens(line) + 1
        if used + cost > budget:
            break
        kept.append(i)
        used += cost
    return kept


def path_list(files, budget: int) -> list[str]:
    order = sorted(files, key=lambda p: (-files[p].size, p))
    return [order[i] for i in _fit_lines(order, budget)]


def largest_sources(index: RepoIndex, files, budget: int) -> list[str]:
    order = sorted((p for p in files if files[p].ndefs), key=lambda p: (-files[p].size, p))
    blocks = ["\n".join(file_lines(p, index.outline(p))) for p in order]
    return [order[i] for i in _fit_lines(blocks, budget)]


class Aider:
    """bench/aider_map.py in aider's environment, one job a line."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen(
            [python, str(ROOT / "bench" / "aider_map.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0"},
        )

    def named(self, root: Path, files: list[str], prompt: str, budget: int) -> dict[str, list[str]]:
        """Each way of running aider -> the files it names (bench/aider_map.py)."""
        assert self.proc.stdin and self.proc.stdout
        job = {"root": str(root), "files": files, "prompt": prompt, "budget": budget}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())


def measure_project(sessions: list[Path], git_dir: Path, budget: int, aider: Aider | None):
    """[(prompt measures by map name: (named, targets))] for the project's prompts."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        cache: dict[str, tuple[Path, RepoIndex, dict]] = {}
        graphs: dict[str, repomap_walk.Graph] = {}
        for session in sessions:
            for p in prompts(session, git_dir):
                if p.commit not in cache:
                    folder = Path(tmp) / p.commit
                    try:
                        checkout(git_dir, p.commit, folder)
                    except (subprocess.CalledProcessError, OSError):  # a snapshot missing objects
                        continue
                    index = RepoIndex(None)
                    cache[p.commit] = (folder, index, index.refresh(folder))
                folder, index, files = cache[p.commit]
                recent = [r for r in p.recent if r in files]
                row: dict[str, tuple[int, int]] = {}

                def score(named, targets=p.targets) -> tuple[int, int]:
                    return len(targets & set(named)), len(targets)

                limit = budget // 2 + 1

                def ctxmill(weights=(ranking.PRIOR_WEIGHT, ranking.SIZE_WEIGHT), step=None,
                            recent=recent, index=index, files=files, text=p.text, limit=limit):
                    order = ranking.rank(index, files, text, recent, limit, weights, step)
                    return score(render(order, index.outline, budget)[1])

                for w in itertools.product(PRIOR_GRID, SIZE_GRID):
                    row[f"w{w}"] = ctxmill(weights=w)
                graph = graphs.setdefault(p.commit, repomap_walk.Graph(index))
                for step in STEPS:
                    row[f"g{step}"] = ctxmill(
                        step=ranking.spread
                        if step == "spread"
                        else repomap_walk.no_step
                        if step == "none"
                        else repomap_walk.Walk(graph, *step)
                    )
                row["ctxmill"] = ctxmill()
                row["ctxmill, no recent"] = ctxmill(recent=[])
                row["path list"] = score(path_list(files, budget))
                row["largest source files"] = score(largest_sources(index, files, budget))
                if aider is not None:
                    for way, found in aider.named(folder, sorted(files), p.text, budget).items():
                        row[AIDER[way]] = score(found)
                out.append(row)
        for _, index, _ in cache.values():
            index.close()
    return out


def share(rows, name) -> tuple[float, float, int, int]:
    named = sum(r[name][0] for r in rows)
    targets = sum(r[name][1] for r in rows)
    mean = sum(r[name][0] / r[name][1] for r in rows) / max(1, len(rows))
    return named / max(1, targets), mean, named, targets


def chosen(rows: dict[str, list], grid: list[str]) -> tuple[str, list]:
    """The grid point best on every project, and the rows of each project scored with the point
    best on the other projects (leave-one-project-out), as {"loo": measure}."""
    everything = [r for found in rows.values() for r in found]
    best = max(grid, key=lambda g: (share(everything, g)[0], g))
    loo: list = []
    for held in rows:
        others = [r for p, found in rows.items() if p != held for r in found]
        pick = max(grid, key=lambda g: (share(others, g)[0], g))
        loo += [{"loo": r[pick]} for r in rows[held]]
    return best, loo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--budget", type=int, default=512)
    parser.add_argument("--aider", help="python of a virtual environment with aider-chat installed")
    parser.add_argument("--only", default="", help="only the projects whose name holds this")
    args = parser.parse_args()
    folder = args.corpus / "transcripts"
    if not folder.is_dir():
        sys.exit(f"corpus absent at {args.corpus}")
    by_project: dict[str, list[Path]] = defaultdict(list)
    for path in session_files(folder):
        if (
            "__" in path.name
            and args.only in path.name
            and mirror_of(args.mirrors, path) is not None
        ):
            by_project["__".join(path.name.split("__")[:2])].append(path)
    aider = Aider(args.aider) if args.aider else None
    rows: dict[str, list] = {}
    for project, sessions in sorted(by_project.items()):
        found = measure_project(sessions, mirror_of(args.mirrors, sessions[0]), args.budget, aider)
        if found:
            rows[project] = found
        print(f"{project}: {len(found)} prompts", file=sys.stderr)
    everything = [r for found in rows.values() for r in found]
    names = [n for n in FIXED if everything and n in everything[0]]
    print(
        f"budget {args.budget} tokens; {len(everything)} prompts with targets; "
        f"{len(rows)} projects; "
        f"{sum(r['path list'][1] for r in everything)} targets\n"
    )
    print("| map | targets named (pooled) | mean share per prompt |\n|---|---:|---:|")
    for name in names:
        pooled, mean, named, targets = share(everything, name)
        print(f"| {name} | {pooled:.3f} ({named}/{targets}) | {mean:.3f} |")
    for title, grid in (
        (
            "prior weights (PageRank, size)",
            [f"w{w}" for w in itertools.product(PRIOR_GRID, SIZE_GRID)],
        ),
        ("graph step (spread, none, or a walk: weight, restart, back)", [f"g{w}" for w in STEPS]),
    ):
        best, loo = chosen(rows, grid)
        print(
            f"\n{title}: in-sample best {best[1:]} -> {share(everything, best)[0]:.3f}; "
            f"leave-one-project-out {share(loo, 'loo')[0]:.3f} "
            f"(mean per prompt {share(loo, 'loo')[1]:.3f})"
        )
        if title.startswith("graph step"):
            print(
                "| graph step | targets named (pooled) | mean share per prompt |\n|---|---:|---:|"
            )
            for g in grid:
                print(
                    f"| {g[1:]} | {share(everything, g)[0]:.3f} | {share(everything, g)[1]:.3f} |"
                )
    print("\n| project | prompts | " + " | ".join(names) + " |\n|---|---:|" + "---:|" * len(names))
    for project, found in rows.items():
        print(
            f"| {project} | {len(found)} | "
            + " | ".join(f"{share(found, n)[0]:.2f}" for n in names)
            + " |"
        )


if __name__ == "__main__":
    main()
