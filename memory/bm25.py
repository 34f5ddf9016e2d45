"""In-memory BM25 index with a weighted heading field, incremental add/remove, exact top-k.

Scoring (Lucene's BM25): idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)),
score(d, q) = sum over query terms of qtf * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen)),
where a document's tf and length count heading terms `heading_weight` times.

Per-term impact lists are computed lazily and cached until the next add/remove, so an update
costs only its own terms. `search` skips the posting lists of frequent terms once they can no
longer lift a new document into the top k (MaxScore), which keeps results exact.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Bm25Params:
    k1: float = 1.2
    b: float = 0.75
    heading_weight: float = 2.0


def weighted_terms(body: list[str], heading: list[str], heading_weight: float) -> dict[str, float]:
    """Term frequencies of one document, heading terms counted `heading_weight` times."""
    terms: dict[str, float] = dict(Counter(body))
    for term, count in Counter(heading).items():
        terms[term] = terms.get(term, 0.0) + heading_weight * count
    return terms


class Index:
    """Documents are ints chosen by the caller; `terms` maps term -> (weighted) frequency."""

    def __init__(self, params: Bm25Params = Bm25Params()):
        self.params = params
        self.postings: dict[str, dict[int, float]] = {}
        self._doc_terms: dict[int, list[str]] | None = {}  # rebuilt from postings when needed
        self.lengths: dict[int, float] = {}
        self.total_length = 0.0
        self._impacts: dict[str, tuple[dict[int, float], float]] = {}
        self._norms: dict[int, float] | None = None

    def __len__(self) -> int:
        return len(self.lengths)

    def __contains__(self, doc: int) -> bool:
        return doc in self.lengths

    def load(self, postings: dict[str, dict[int, float]], lengths: dict[int, float]) -> None:
        """Adopt saved postings and document lengths (as produced by add)."""
        self.postings, self.lengths = postings, lengths
        self.total_length = sum(lengths.values())
        self._doc_terms = None
        self._invalidate()

    def _terms_by_doc(self) -> dict[int, list[str]]:
        if self._doc_terms is None:
            by_doc: dict[int, list[str]] = {doc: [] for doc in self.lengths}
            for term, posting in self.postings.items():
                for doc in posting:
                    by_doc[doc].append(term)
            self._doc_terms = by_doc
        return self._doc_terms

    def add(self, doc: int, terms: dict[str, float]) -> None:
        if doc in self.lengths:
            self.remove(doc)
        if self._doc_terms is not None:
            self._doc_terms[doc] = list(terms)
        length = sum(terms.values())
        self.lengths[doc] = length
        self.total_length += length
        postings = self.postings
        for term, tf in terms.items():
            posting = postings.get(term)
            if posting is None:
                postings[term] = {doc: tf}
            else:
                posting[doc] = tf
        self._invalidate()

    def remove(self, doc: int) -> None:
        terms = self._terms_by_doc().pop(doc)
        self.total_length -= self.lengths.pop(doc)
        for term in terms:
            posting = self.postings[term]
            del posting[doc]
            if not posting:
                del self.postings[term]
        self._invalidate()

    def _invalidate(self) -> None:
        self._impacts.clear()
        self._norms = None

    def _impact(self, term: str) -> tuple[dict[int, float], float]:
        cached = self._impacts.get(term)
        if cached is not None:
            return cached
        k1, b = self.params.k1, self.params.b
        if self._norms is None:
            avg = self.total_length / len(self.lengths) if self.lengths else 1.0
            self._norms = {d: k1 * (1.0 - b + b * length / avg) for d, length in self.lengths.items()}
        norms = self._norms
        posting = self.postings[term]
        n, df = len(self.lengths), len(posting)
        weight = math.log(1.0 + (n - df + 0.5) / (df + 0.5)) * (k1 + 1.0)
        impacts = {d: weight * tf / (tf + norms[d]) for d, tf in posting.items()}
        cached = (impacts, max(impacts.values()))
        self._impacts[term] = cached
        return cached

    def warm(self) -> None:
        """Compute every impact list now (what a long-lived server does once)."""
        for term in self.postings:
            self._impact(term)

    def search(self, query: list[str], limit: int, weights: dict[int, float] | None = None) -> list[tuple[int, float]]:
        """Top `limit` (doc, score), best first. `weights` multiplies scores (each in [0, 1])."""
        lists = []
        for term, qtf in Counter(query).items():
            if term in self.postings:
                impacts, top = self._impact(term)
                lists.append((top * qtf, qtf, impacts))
        lists.sort(key=lambda item: item[0], reverse=True)
        remaining = [0.0] * (len(lists) + 1)
        for i in range(len(lists) - 1, -1, -1):
            remaining[i] = remaining[i + 1] + lists[i][0]
        scores: dict[int, float] = {}
        for i, (_, qtf, impacts) in enumerate(lists):
            if i and len(scores) >= limit and remaining[i] < _kth_best(scores, limit, weights):
                _add_to_candidates(scores, lists[i:])
                break
            if not scores and qtf == 1:
                scores = dict(impacts)
                continue
            get = scores.get
            for doc, impact in impacts.items():
                scores[doc] = get(doc, 0.0) + qtf * impact
        if weights is not None:
            scores = {d: s * weights.get(d, 1.0) for d, s in scores.items()}
            scores = {d: s for d, s in scores.items() if s > 0.0}
        best = sorted(scores, key=scores.__getitem__, reverse=True)[:limit]
        return [(doc, scores[doc]) for doc in best]


def _kth_best(scores: dict[int, float], k: int, weights: dict[int, float] | None) -> float:
    values = scores.values() if weights is None else [s * weights.get(d, 1.0) for d, s in scores.items()]
    ranked = sorted(values, reverse=True)
    return ranked[k - 1] if len(ranked) >= k else 0.0


def _add_to_candidates(scores: dict[int, float], lists) -> None:
    """Finish the scores of the current candidates only; no new document can reach the top k."""
    for _, qtf, impacts in lists:
        get = impacts.get
        for doc in scores:
            impact = get(doc)
            if impact is not None:
                scores[doc] += qtf * impact
