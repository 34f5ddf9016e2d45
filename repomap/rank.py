"""Rank a repository's files for a prompt.

A file's score is the sum of:
- over the prompt's terms it shares, the term's rarity among the files (`log(1 + N / df)`),
  counted twice when the term is in the file's path and once when it is in a defined name (a
  code identifier the prompt names whole counts three times more; a file whose names hold many
  different terms counts each less, as BM25 does for long documents);
- `MENTION_BONUS` when the prompt names the file's path (relative, or absolute and ending with
  it), a share of `FOLDER_BONUS` when it names a folder the file is in;
- a bonus for the files the session touched most recently;
- half the score of the best files that use names the file defines ("what uses what", one step
  of the graph `repomap.graph` from the files the prompt points at);
- a prior, the same for every prompt: `PRIOR_WEIGHT × log(1 + PageRank × N)` (a file much used
  across the repository) plus `SIZE_WEIGHT × log(1 + size in KB)` (a larger file holds more).
Ties break on the path, so the order is a function of the files, the prompt and the recent list
alone.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Collection

from repomap.index import RepoIndex
from repomap.terms import code_words, mentioned_paths, terms

RECENT_BONUS = 6.0
RECENT_DECAY = 0.7
MENTION_BONUS = 12.0
FOLDER_BONUS = 6.0
SEEDS = 20
SPREAD = 0.5
DISTINCTIVE_MAX_FILES = 3
"""A name defined in more files than this says nothing about which one a file uses."""
PRIOR_WEIGHT = 1.0
SIZE_WEIGHT = 0.5


def rank(
    index: RepoIndex,
    files: Collection[str],
    prompt: str,
    recent: list[str],
    limit: int | None = None,
    weights: tuple[float, float] = (PRIOR_WEIGHT, SIZE_WEIGHT),
    graph_step: Callable[[RepoIndex, Collection[str], dict[str, float]], None] | None = None,
) -> list[str]:
    """The paths of `files` (the index's, `RepoIndex.paths`), best first for `prompt` and the
    recently touched `recent` (repository-relative paths, most recent first): all of them, or the
    first `limit`. `weights`: the prior's (PageRank, size) weights; `graph_step(index, files,
    score)`: how the prompt's scores move along what uses what (default `spread`;
    bench/repomap_walk.py tries a personalised PageRank instead). With a `limit`, only the files
    the prompt scored and the best by the prior alone are ranked (a file the prompt did not score
    is ordered by its prior), so a prompt never reads every file's row."""
    score: dict[str, float] = defaultdict(float)
    rows = [r for r in index.matches(terms(prompt)) if r[1] in files]
    if rows:
        whole = code_words(prompt)
        df = Counter(term for term, *_ in rows)
        n, mean = max(1, len(files)), max(1.0, index.mean_def_terms())
        for term, path, in_path, in_defs, ndefterms in rows:
            per_def = 1.0 / (0.5 + 0.5 * ndefterms / mean)
            named = (1.0 if in_defs else 0.0) + (3.0 if in_defs and term in whole else 0.0)
            score[path] += math.log(1 + n / df[term]) * (
                (2.0 if in_path else 0.0) + per_def * named
            )
    _mentions(files, prompt, score)
    for i, path in enumerate(dict.fromkeys(p for p in recent if p in files)):
        score[path] += RECENT_BONUS * RECENT_DECAY**i
    (graph_step or spread)(index, files, score)
    scored = [p for p in score if p in files]
    if limit is None or 2 * (limit + len(scored)) >= len(files):
        base = index.prior_scores(weights)  # one scan of every file's prior
    else:  # an unscored file is among the best `limit` overall only if it is by its prior
        base = index.prior_scores(weights, best=limit)
        base.update(index.prior_scores(weights, paths=scored))
    total = {p: score.get(p, 0.0) + v for p, v in base.items() if p in files}
    key = lambda p: (-round(total[p], 9), p)  # noqa: E731
    return sorted(total, key=key) if limit is None else heapq.nsmallest(limit, total, key=key)


def _mentions(files: Collection[str], prompt: str, score: dict[str, float]) -> None:
    """Raise the files (and the files of the folders) the prompt names by path."""
    mentioned = mentioned_paths(prompt)
    if not mentioned:
        return
    for mention in mentioned:
        hits = [p for p in files if p == mention or mention.endswith("/" + p)]
        for path in hits:
            score[path] += MENTION_BONUS
        if hits:
            continue
        folder = mention.rstrip("/") + "/"
        inside = [p for p in files if p.startswith(folder) or ("/" + folder) in "/" + p]
        for path in inside:
            score[path] += FOLDER_BONUS / len(inside) ** 0.5


def spread(index: RepoIndex, files: Collection[str], score: dict[str, float]) -> None:
    """Pass part of the best files' scores to the files whose distinctive names they use."""
    seeds = sorted((p for p in score if score[p] > 0), key=lambda p: (-score[p], p))[:SEEDS]
    passed: dict[str, float] = defaultdict(float)
    for seed in seeds:
        refs = [r for r in index.outline(seed).refs if len(r) >= 4]
        used = {
            p
            for paths in index.definers(refs).values()
            if len(paths) <= DISTINCTIVE_MAX_FILES
            for p in paths
            if p != seed and p in files
        }
        for target in used:
            passed[target] += SPREAD * score[seed] / len(used) ** 0.5
    for path, extra in passed.items():
        score[path] += extra
