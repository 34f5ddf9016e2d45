"""A personalised PageRank by local push as the map's graph step, for bench/repomap_corpus.py.

The map's ranking (`repomap.rank`) moves a prompt's scores one step along what uses what
(`rank.spread`: the best files pass half their score to the files whose distinctive names they
use). This tries instead the PageRank personalised to the best files over the whole graph of
what uses what (`repomap.graph.links_of`), approximated by local push (Andersen, Chung and Lang,
"Local graph partitioning using PageRank vectors", 2006): mass moves from a node only when its
residual is worth pushing, so the cost depends on the seeds' neighbourhood and `EPSILON`, never
on the repository's size, and every estimate is at most the exact value. `Walk(weight, restart,
back)` adds `weight` x the seeds' total score x each file's estimate; `restart` is the chance a
walk returns to the seeds at each step (the larger, the more local); `back` is the share of a
file's mass that goes to the files using it rather than to those it uses.

Measured with the corpus (bench/repomap_corpus.py, in-sample and leave-one-project-out over the
grid `GRID`), it names no more of the files the agent went on to open than `rank.spread` beyond
noise, so the map keeps `rank.spread`; see docs/repo-map.md.
"""

from __future__ import annotations

import itertools
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from repomap.graph import links_of
from repomap.rank import SEEDS

EPSILON = 1e-3
"""Local push stops when no node holds residual mass of `EPSILON` per link it has."""
MAX_PUSHES = 2000
GRID = tuple(itertools.product((0.5, 1.0, 2.0, 4.0), (0.15, 0.3, 0.5), (0.0, 0.3)))
"""(weight, restart, back) tried by bench/repomap_corpus.py."""


def local_pagerank(
    neighbours: Callable[[str], list[tuple[str, float]]],
    seeds: Mapping[str, float],
    restart: float = 0.15,
    epsilon: float = EPSILON,
    max_pushes: int = MAX_PUSHES,
) -> dict[str, float]:
    """PageRank personalised to `seeds` (weights, normalised here), approximated by local push:
    node -> estimate, for the nodes it reached. `neighbours(node)` gives a node's links with their
    weights (normalised here; a node without links hands its mass back to the seeds), called at
    most once per node."""
    total = sum(v for v in seeds.values() if v > 0)
    if total <= 0:
        return {}
    start = {k: v / total for k, v in sorted(seeds.items()) if v > 0}
    residual: dict[str, float] = defaultdict(float, start)
    estimate: dict[str, float] = defaultdict(float)
    links: dict[str, list[tuple[str, float]]] = {}
    queue, queued, pushes = deque(start), set(start), 0
    while queue and pushes < max_pushes:
        node = queue.popleft()
        queued.discard(node)
        if node not in links:
            out = [(t, w) for t, w in sorted(neighbours(node)) if w > 0 and t != node]
            weight = sum(w for _, w in out)
            links[node] = [(t, w / weight) for t, w in out]
        mass = residual.pop(node, 0.0)
        if mass < epsilon * max(1, len(links[node])):
            if mass:
                residual[node] = mass
            continue
        pushes += 1
        estimate[node] += restart * mass
        for target, share in links[node] or list(start.items()):
            residual[target] += (1 - restart) * mass * share
            if target not in queued and residual[target] >= epsilon * max(
                1, len(links.get(target, ()))
            ):
                queue.append(target)
                queued.add(target)
    return dict(estimate)


class Graph:
    """One indexed repository's links both ways (`repomap.graph.links_of`, as its prior uses)."""

    def __init__(self, index) -> None:
        self.uses = links_of(index.outlines(), index.all_definers())
        self.used_by: dict[str, dict[str, float]] = defaultdict(dict)
        for source, targets in self.uses.items():
            for target, weight in targets.items():
                self.used_by[target][source] = weight

    def neighbours(self, path: str, back: float) -> list[tuple[str, float]]:
        out: dict[str, float] = defaultdict(float)
        for share, links in (
            (1 - back, self.uses.get(path, {})),
            (back, self.used_by.get(path, {})),
        ):
            total = sum(links.values())
            for other, weight in links.items():
                if share > 0 and total > 0:
                    out[other] += share * weight / total
        return sorted(out.items())


@dataclass(frozen=True)
class Walk:
    """A graph step for `repomap.rank.rank(graph_step=...)`."""

    graph: Graph
    weight: float
    restart: float
    back: float

    def __call__(self, index, files: Mapping, score: dict[str, float]) -> None:
        best = sorted((p for p in score if score[p] > 0), key=lambda p: (-score[p], p))[:SEEDS]
        if not best or self.weight <= 0:
            return
        seeds = {p: score[p] for p in best}
        mass = sum(seeds.values())
        for path, value in local_pagerank(
            lambda p: self.graph.neighbours(p, self.back), seeds, self.restart
        ).items():
            if path in files:
                score[path] += self.weight * mass * value


def no_step(index, files: Mapping, score: dict[str, float]) -> None:
    """No graph step: the prompt's scores and the prior alone."""
