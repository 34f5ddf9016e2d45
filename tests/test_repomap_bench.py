"""bench/repomap_walk.py's personalised PageRank by local push and bench/repomap_sessions.py's
mapping of a session's paths to its repository (both decide what bench/repomap_corpus.py
reports)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.repomap_sessions import _prefix
from bench.repomap_walk import local_pagerank
from repomap.graph import pagerank


def _graph(seed: int, n: int) -> dict[str, dict[str, float]]:
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(n)]
    links = {
        a: {b: rng.random() + 0.01 for b in rng.sample(nodes, rng.randint(0, min(4, n))) if b != a}
        for a in nodes
    }
    return {a: t for a, t in links.items() if t}


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 120), st.sampled_from([1e-2, 1e-3, 1e-5]))
def test_local_push_approaches_the_personalised_pagerank_from_below(seed, n, epsilon):
    links = _graph(seed, n)
    nodes = [f"n{i}" for i in range(n)]
    seeds = {"n0": 2.0, f"n{n - 1}": 1.0}
    exact = pagerank(
        links, nodes, seeds, iterations=400
    )  # restart 0.15, the power method's 1 - DAMPING
    estimate = local_pagerank(
        lambda p: sorted(links.get(p, {}).items()), seeds, 0.15, epsilon=epsilon
    )
    assert all(0 <= estimate.get(k, 0.0) <= v + 1e-9 for k, v in exact.items())


def test_local_push_matches_the_power_method_and_reads_only_the_seeds_neighbourhood():
    links = _graph(7, 300)
    nodes = [f"n{i}" for i in range(300)]
    seeds = {"n1": 2.0, "n5": 1.0}
    exact = pagerank(links, nodes, seeds, iterations=300)
    estimate = local_pagerank(
        lambda p: sorted(links.get(p, {}).items()), seeds, 0.15, epsilon=1e-6, max_pushes=10**6
    )
    assert max(abs(exact[k] - estimate.get(k, 0.0)) for k in nodes) < 1e-3
    chain = {
        f"c{i}": {f"c{i + 1}": 1.0} for i in range(100_000)
    }  # a long chain: only its start is read
    read: list[str] = []
    local_pagerank(
        lambda p: read.append(p) or sorted(chain.get(p, {}).items()), {"c0": 1.0}, 0.5, epsilon=1e-3
    )
    assert len(read) < 20


def test_a_session_maps_to_its_repository_by_the_same_prefix_whatever_the_hash_seed():
    known = {"a.py", "b.py"}
    paths = [
        "/home/me/r/a.py",
        "/srv/x/b.py",
    ]  # each prefix names one file: the shorter wins, in any order
    assert _prefix(paths, known) == _prefix(list(reversed(paths)), known) == "/srv/x/"
