"""BM25 index: incremental updates equal a fresh build; pruned top-k equals exhaustive scoring."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.bm25 import Bm25Params, Index, Weights, weighted_terms

VOCAB = [f"t{i}" for i in range(12)]
docs_strategy = st.lists(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8), min_size=1, max_size=25)


def build(docs, params=Bm25Params()):
    index = Index(params)
    for i, doc in enumerate(docs):
        index.add(i, weighted_terms(doc, [], params.heading_weight))
    return index


def brute_force(docs, query, params=Bm25Params()):
    n = len(docs)
    avg = sum(len(d) for d in docs) / n
    scores = {}
    for i, doc in enumerate(docs):
        score = 0.0
        for term in query:
            tf, df = doc.count(term), sum(term in d for d in docs)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * (params.delta + tf * (params.k1 + 1) / (tf + params.k1 * (1 - params.b + params.b * len(doc) / avg)))
        if score > 0:
            scores[i] = score
    return scores


@settings(max_examples=150, deadline=None)
@given(docs_strategy, st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6), st.integers(1, 6))
def test_topk_matches_exhaustive_scores(docs, query, limit):
    expected = brute_force(docs, query)
    got = build(docs).search(query, limit)
    assert len(got) == min(limit, len(expected))
    for doc, score in got:
        assert math.isclose(score, expected[doc], rel_tol=1e-9)
    # nothing left out scores higher than the last one returned
    if got:
        assert all(s <= got[-1][1] + 1e-9 for d, s in expected.items() if d not in dict(got))


@settings(max_examples=100, deadline=None)
@given(docs_strategy, st.data())
def test_incremental_add_remove_equals_fresh_build(docs, data):
    removed = data.draw(st.sets(st.integers(0, len(docs) - 1), max_size=len(docs) - 1))
    index = build(docs)
    index.warm()
    for doc in removed:
        index.remove(doc)
    kept = [d for i, d in enumerate(docs) if i not in removed]
    fresh = build(kept)
    query = data.draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=5))
    got = [s for _, s in index.search(query, 50)]
    want = [s for _, s in fresh.search(query, 50)]
    assert len(got) == len(want) and all(math.isclose(a, b) for a, b in zip(got, want))


def test_heading_terms_weigh_more_than_body_terms():
    params = Bm25Params(heading_weight=3.0)
    index = Index(params)
    index.add(0, weighted_terms(["cache", "other"], [], params.heading_weight))
    index.add(1, weighted_terms(["other"], ["cache"], params.heading_weight))
    index.add(2, weighted_terms(["unrelated"], [], params.heading_weight))
    assert [d for d, _ in index.search(["cache"], 2)] == [1, 0]


def test_weights_filter_and_scale_results():
    index = build([["a", "b"], ["a"], ["a", "a"]])
    plain = dict(index.search(["a"], 3))
    weighted = index.search(["a"], 3, Weights("w", lambda d: {1: 0.0, 2: 0.5}.get(d, 1.0)))
    assert 1 not in dict(weighted)
    assert math.isclose(dict(weighted)[2], plain[2] * 0.5)


@settings(max_examples=50, deadline=None)
@given(docs_strategy, st.lists(st.sampled_from(VOCAB), min_size=1, max_size=5))
def test_dump_then_lazy_load_gives_the_same_results_and_accepts_updates(docs, query):
    index = build(docs)
    loaded = Index(index.params)
    loaded.load(*index.dump())
    assert loaded.search(query, 10) == index.search(query, 10)
    loaded.remove(0)
    index.remove(0)
    loaded.add(99, {"t1": 2.0})
    index.add(99, {"t1": 2.0})
    assert loaded.search(query, 10) == index.search(query, 10)


def brute_force_weighted(docs, query: dict, weights: dict, params=Bm25Params()):
    """Scores by definition: weight(doc) x sum of query weight x BM25+ term score."""
    n = len(docs)
    avg = sum(len(d) for d in docs) / n
    scores = {}
    for i, doc in enumerate(docs):
        score = 0.0
        for term, qw in query.items():
            tf, df = doc.count(term), sum(term in d for d in docs)
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += qw * idf * (params.delta + tf * (params.k1 + 1) / (tf + params.k1 * (1 - params.b + params.b * len(doc) / avg)))
        if score > 0 and weights[i] > 0:
            scores[i] = score * weights[i]
    return scores


@settings(max_examples=200, deadline=None)
@given(
    docs_strategy,
    st.dictionaries(st.sampled_from(VOCAB), st.sampled_from([0.3, 0.5, 1.0, 2.0]), min_size=1, max_size=6),
    st.integers(1, 6),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.data(),
)
def test_weighted_topk_matches_the_definition(docs, query, limit, delta, data):
    params = Bm25Params(delta=delta)
    weights = {i: data.draw(st.sampled_from([0.0, 0.25, 0.5, 1.0])) for i in range(len(docs))}
    expected = brute_force_weighted(docs, query, weights, params)
    index = build(docs, params)
    got = index.search(query, limit, Weights(("w", tuple(weights.values())), weights.__getitem__))
    assert len(got) == min(limit, len(expected))
    for doc, score in got:
        assert math.isclose(score, expected[doc], rel_tol=1e-9)
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    if got:
        assert all(s <= got[-1][1] * (1 + 1e-9) for d, s in expected.items() if d not in dict(got))
    assert index.search(query, limit) == build(docs, params).search(query, limit)  # weights leave the plain lists alone


def test_delta_puts_a_document_matching_more_query_words_first():
    # doc 0 repeats one query word; doc 1 has both once: plain BM25 (delta 0) prefers doc 0
    docs = [["common"] * 6, ["common", "rare", "f1", "f2", "f3", "f4"], ["filler"], ["filler", "more"],
            ["rare", "x", "y", "z", "w", "v", "u"], ["g"], ["h"]]
    assert build(docs, Bm25Params(delta=0.0)).search({"common": 1.0, "rare": 1.0}, 1)[0][0] == 0
    assert build(docs, Bm25Params(delta=0.5)).search({"common": 1.0, "rare": 1.0}, 1)[0][0] == 1
