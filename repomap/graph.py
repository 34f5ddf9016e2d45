"""What uses what across a repository: a graph of files and its PageRank, personalised or not.

A file links to the files that define a name it uses (a name of `MIN_NAME` characters or more,
defined in at most `MAX_DEFINERS` files: a name every file defines says nothing); each link
weighs 1 / (number of definers) and a file's links are normalised, so a file that uses much
does not outvote one that uses little. `pagerank(links, nodes, personal)` is the power method
with damping `DAMPING`, a node without links handing its rank to the personal vector (uniform
when none is given). Deterministic: nodes and links are iterated in sorted order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

DAMPING = 0.85
ITERATIONS = 30
MIN_NAME = 4
MAX_DEFINERS = 5

Links = dict[str, dict[str, float]]


def links_of(outlines, definers: Mapping[str, list[str]]) -> Links:
    """path -> {path it uses: weight} for (path, Outline) pairs and name -> defining files."""
    out: Links = {}
    for path, o in outlines:
        used: dict[str, float] = defaultdict(float)
        for ref in o.refs:
            where = definers.get(ref) if len(ref) >= MIN_NAME else None
            if where and len(where) <= MAX_DEFINERS:
                for target in where:
                    if target != path:
                        used[target] += 1.0 / len(where)
        if used:
            out[path] = dict(used)
    return out


def pagerank(
    links: Links,
    nodes: list[str],
    personal: Mapping[str, float] | None = None,
    iterations: int = ITERATIONS,
) -> dict[str, float]:
    """The PageRank of each of `nodes` (summing to 1) over `links`, restarting at `personal`
    (weights, normalised here; None: every node alike)."""
    if not nodes:
        return {}
    order = sorted(nodes)
    known = set(order)
    if personal:
        total = sum(v for k, v in personal.items() if k in known and v > 0)
        restart = (
            {k: v / total for k, v in sorted(personal.items()) if k in known and v > 0}
            if total
            else {}
        )
    else:
        restart = {}
    if not restart:
        restart = {n: 1.0 / len(order) for n in order}
    out_links = {}
    for source in order:
        targets = {t: w for t, w in links.get(source, {}).items() if t in known}
        total = sum(targets.values())
        if total > 0:
            out_links[source] = [(t, w / total) for t, w in sorted(targets.items())]
    rank = dict(restart)
    for _ in range(iterations):
        nxt: dict[str, float] = defaultdict(float)
        dangling = 0.0
        for source in order:
            value = rank.get(source, 0.0)
            if not value:
                continue
            edges = out_links.get(source)
            if edges is None:
                dangling += value
                continue
            for target, weight in edges:
                nxt[target] += DAMPING * value * weight
        spread = (1 - DAMPING) + DAMPING * dangling
        for node, share in restart.items():
            nxt[node] += spread * share
        rank = nxt
    return {n: rank.get(n, 0.0) for n in order}


def file_priors(index) -> dict[str, float]:
    """Each indexed file's PageRank times the number of files (1.0: an average file), for the
    files some other file uses; the rest get no prior."""
    links = links_of(index.outlines(), index.all_definers())
    nodes = sorted(set(links) | {t for targets in links.values() for t in targets})
    ranks = pagerank(links, nodes)
    used = {t for targets in links.values() for t in targets}
    n = max(1, len(index.files()))
    return {p: v * n for p, v in ranks.items() if p in used}
