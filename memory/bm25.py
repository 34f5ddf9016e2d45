"""In-memory BM25 index with a weighted heading field, incremental add/remove, exact top-k.

Scoring (Lucene's BM25): idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)),
score(d, q) = sum over query terms of qtf * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen)),
where a document's tf and length count heading terms `heading_weight` times.

A saved index is split into 256 buckets of posting lists by a hash of the term; `load` keeps
them serialized and a bucket is decoded the first time one of its terms is needed, so a cold
process answering one query decodes a few buckets, not the whole index.

Per-term impact lists are computed lazily and cached until the next add/remove, so an update
costs only its own terms. `search` skips the posting lists of frequent terms once they can no
longer lift a new document into the top k (MaxScore), which keeps results exact.
"""

from __future__ import annotations

import heapq
import marshal
import math
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter


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


BUCKETS = 256


def _bucket(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) % BUCKETS


class Index:
    """Documents are ints chosen by the caller; `terms` maps term -> (weighted) frequency."""

    def __init__(self, params: Bm25Params = Bm25Params()):
        self.params = params
        self.postings: dict[str, dict[int, float]] = {}
        self._doc_terms: dict[int, list[str]] | None = {}  # rebuilt from postings when needed
        self._serialized: dict[int, bytes] = {}  # bucket -> postings not decoded yet
        self.lengths: dict[int, float] = {}
        self.total_length = 0.0
        self._impacts: dict[str, tuple[dict[int, float], float]] = {}
        self._norms: dict[int, float] | None = None

    def __len__(self) -> int:
        return len(self.lengths)

    def __contains__(self, doc: int) -> bool:
        return doc in self.lengths

    def dump(self) -> tuple[list[bytes], dict[int, float]]:
        """(posting buckets, document lengths) for `load`."""
        self._decode_all()
        buckets: list[dict[str, dict[int, float]]] = [{} for _ in range(BUCKETS)]
        for term, posting in self.postings.items():
            buckets[_bucket(term)][term] = posting
        return [marshal.dumps(bucket) for bucket in buckets], dict(self.lengths)

    def load(self, buckets: list[bytes], lengths: dict[int, float]) -> None:
        """Adopt what `dump` returned; buckets are decoded when first needed."""
        if len(buckets) != BUCKETS:
            raise ValueError("wrong number of posting buckets")
        self.postings, self.lengths = {}, lengths
        self._serialized = dict(enumerate(buckets))
        self.total_length = sum(lengths.values())
        self._doc_terms = None
        self._invalidate()

    def _decode(self, term: str) -> None:
        blob = self._serialized.pop(_bucket(term), None)
        if blob is not None:
            self.postings.update(marshal.loads(blob))

    def _decode_all(self) -> None:
        for blob in self._serialized.values():
            self.postings.update(marshal.loads(blob))
        self._serialized.clear()

    def _terms_by_doc(self) -> dict[int, list[str]]:
        if self._doc_terms is None:
            self._decode_all()
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
            if self._serialized:
                self._decode(term)
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
        self._decode_all()
        for term in self.postings:
            self._impact(term)

    def search(self, query: list[str], limit: int, weight: Callable[[int], float] | None = None) -> list[tuple[int, float]]:
        """Top `limit` (doc, score), best first. `weight(doc)` in [0, 1] multiplies a score; 0 drops it."""
        weights = _Memo(weight) if weight is not None else None
        lists = []
        for term, qtf in Counter(query).items():
            if self._serialized:
                self._decode(term)
            if term in self.postings:
                impacts, top = self._impact(term)
                lists.append((top * qtf, qtf, impacts))
        lists.sort(key=lambda item: item[0], reverse=True)
        remaining = [0.0] * (len(lists) + 1)
        for i in range(len(lists) - 1, -1, -1):
            remaining[i] = remaining[i + 1] + lists[i][0]
        scores: dict[int, float] = {}
        for i, (_, qtf, impacts) in enumerate(lists):
            if i and len(scores) >= limit:
                threshold = _kth_best(scores, limit, weights, remaining[i])
                if remaining[i] < threshold:
                    scores = _finish_candidates(scores, lists[i:], threshold - remaining[i])
                    break
            if not scores and qtf == 1:
                scores = dict(impacts)
                continue
            get = scores.get
            for doc, impact in impacts.items():
                scores[doc] = get(doc, 0.0) + qtf * impact
        if weights is not None:
            scores = {d: s * weights[d] for d, s in scores.items()}
            scores = {d: s for d, s in scores.items() if s > 0.0}
        best = heapq.nlargest(limit, scores.items(), key=itemgetter(1))
        return [(doc, score) for doc, score in best]


class _Memo(dict):
    """weight(doc), each computed once per search."""

    def __init__(self, weight: Callable[[int], float]):
        super().__init__()
        self.weight = weight

    def __missing__(self, doc: int) -> float:
        value = self[doc] = self.weight(doc)
        return value


def _kth_best(scores: dict[int, float], k: int, weights: _Memo | None, bound: float) -> float:
    """The k-th best (weighted) score so far; 0.0 when it cannot exceed `bound` anyway."""
    if max(scores.values()) <= bound:
        return 0.0
    values = scores.values() if weights is None else [s * weights[d] for d, s in scores.items()]
    ranked = heapq.nlargest(k, values)
    return ranked[-1] if len(ranked) >= k else 0.0


def _finish_candidates(scores: dict[int, float], lists, floor: float) -> dict[int, float]:
    """Complete the scores of candidates that can still reach the top k (score >= floor);
    no document outside `scores` can, since the remaining lists sum to less than the k-th best."""
    finished = {doc: score for doc, score in scores.items() if score >= floor}
    for _, qtf, impacts in lists:
        get = impacts.get
        for doc in finished:
            impact = get(doc)
            if impact is not None:
                finished[doc] += qtf * impact
    return finished
