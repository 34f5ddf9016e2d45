"""In-memory BM25 index with a weighted heading field, incremental add/remove, exact top-k.

Scoring (Lucene's BM25 with BM25+'s lower bound delta): idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)),
score(d, q) = w(d) * sum over matched query terms of qw(t) * idf * (delta + tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))),
where a document's tf and length count heading terms `heading_weight` times, qw(t) is the query
weight of the term (its count, or a weight the caller gives) and w(d) an optional document
weight in [0, 1] (recency, scope).

A saved index is split into 512 buckets of posting lists by a hash of the term; `load` keeps
them serialized and a bucket is decoded the first time one of its terms is needed, so a cold
process answering one query decodes a few buckets, not the whole index. Document lengths are
one array indexed by document number, so loading them is a copy of bytes.

Per-term impact lists are computed lazily and cached until the next add/remove, so an update
costs only its own terms, and a cold query only the documents its terms occur in; with
document weights, per weight table, the weights multiplied in.
`search` skips the posting lists of frequent terms once they can no longer lift a new document
into the top k (MaxScore), which keeps results exact.
"""

from __future__ import annotations

import heapq
import marshal
import math
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter

from ground.records import Record


class Bm25Params(Record):
    """BM25's k1 and b; heading (section and tags) terms count `heading_weight` times.

    Ranking on top of BM25 (what `memory.api.search` does):
    - `delta` (BM25+, Lv and Zhai 2011): every matched term adds delta * idf, so matching one
      more query word counts for more than repeating one already matched (in the text or as a
      tag), and long entries are not pushed below short ones that match less;
    - `fragment_weight`: in a query, the parts and pairs of a compound weigh this much against
      the compound as written (see `memory.tokenize.Tokenizer.query_terms`).
    Recency is not a BM25 parameter: see `memory.config.MemoryConfig.recency`.
    """

    k1: float = 1.2
    b: float = 0.75
    heading_weight: float = 2.0
    delta: float = 0.5
    fragment_weight: float = 1.0


def weighted_terms(body: list[str], heading: list[str], heading_weight: float) -> dict[str, float]:
    """Term frequencies of one document, heading terms counted `heading_weight` times."""
    terms: dict[str, float] = dict(Counter(body))
    for term, count in Counter(heading).items():
        terms[term] = terms.get(term, 0.0) + heading_weight * count
    return terms


BUCKETS = 512
NO_DOC = -1.0  # the length recorded for a document number no document has


def _bucket(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) % BUCKETS


class Index:
    """Documents are ints >= 0 chosen by the caller (best dense: lengths are an array indexed by
    them); `terms` maps term -> (weighted) frequency.

    Posting lists live in BUCKETS dicts by a hash of the term. A bucket loaded from disk stays
    serialized until one of its terms is needed, and keeps its serialized form until it changes,
    so `dump` after a small update re-encodes only the buckets that update touched. A serialized
    bucket is anything `bytes()` turns into marshal bytes (the index file hands in pieces it
    reads only then).
    """

    def __init__(self, params: Bm25Params = Bm25Params()):
        self.params = params
        self._buckets: list[dict[str, dict[int, float]] | None] = [{} for _ in range(BUCKETS)]  # None: not decoded
        self._blobs: dict[int, bytes] = {}  # bucket -> its serialized form, while it is unchanged
        self._doc_terms: dict[int, list[str]] | None = {}  # rebuilt from postings when needed
        self.lengths = array("d")  # doc -> its length (weighted term count), NO_DOC where there is none
        self.count = 0
        self.total_length = 0.0
        self._impacts: dict[str, tuple[dict[int, float], float]] = {}
        self._weighted: dict[object, dict[str, tuple[dict[int, float], float]]] = {}

    def __len__(self) -> int:
        return self.count

    def __contains__(self, doc: int) -> bool:
        return 0 <= doc < len(self.lengths) and self.lengths[doc] != NO_DOC

    def docs(self) -> list[int]:
        return [doc for doc, length in enumerate(self.lengths) if length != NO_DOC]

    def dump(self) -> tuple[list[bytes], bytes]:
        """(posting buckets, document lengths) for `load`."""
        blobs = self._blobs
        for i, bucket in enumerate(self._buckets):
            if bucket is not None and i not in blobs:  # a bucket never decoded is as loaded
                blobs[i] = marshal.dumps(bucket)
        return [blobs[i] for i in range(BUCKETS)], self.lengths.tobytes()

    def load(self, buckets, lengths) -> None:
        """Adopt what `dump` returned (`buckets`: any sequence of them, each taken when its bucket
        is first needed; `lengths`: any buffer of those bytes)."""
        if len(buckets) != BUCKETS:
            raise ValueError("wrong number of posting buckets")
        self._buckets = [None] * BUCKETS
        self._blobs = _Stored(buckets)
        self.lengths = array("d")
        self.lengths.frombytes(lengths)
        holes = self.lengths.count(NO_DOC)
        self.count = len(self.lengths) - holes
        self.total_length = sum(self.lengths) - NO_DOC * holes
        self._doc_terms = None
        self._invalidate()

    def _bucket_of(self, term: str) -> dict[str, dict[int, float]]:
        return self._bucket_of_index(_bucket(term))

    def posting(self, term: str) -> dict[int, float] | None:
        """doc -> (weighted) term frequency, None when no document has the term."""
        return self._bucket_of(term).get(term)

    def terms(self) -> Iterable[str]:
        for i in range(BUCKETS):
            yield from self._bucket_of_index(i)

    def _bucket_of_index(self, i: int) -> dict[str, dict[int, float]]:
        bucket = self._buckets[i]
        if bucket is None:
            bucket = self._buckets[i] = marshal.loads(bytes(self._blobs[i]))
        return bucket

    def _terms_by_doc(self) -> dict[int, list[str]]:
        if self._doc_terms is None:
            by_doc: dict[int, list[str]] = {doc: [] for doc in self.docs()}
            for i in range(BUCKETS):
                for term, posting in self._bucket_of_index(i).items():
                    for doc in posting:
                        by_doc[doc].append(term)
            self._doc_terms = by_doc
        return self._doc_terms

    def add(self, doc: int, terms: dict[str, float]) -> None:
        if doc in self:
            self.remove(doc)
        if self._doc_terms is not None:
            self._doc_terms[doc] = list(terms)
        length = sum(terms.values())
        if doc >= len(self.lengths):
            self.lengths.extend([NO_DOC] * (doc + 1 - len(self.lengths)))
        self.lengths[doc] = length
        self.count += 1
        self.total_length += length
        blobs = self._blobs
        for term, tf in terms.items():
            i = _bucket(term)
            bucket = self._bucket_of_index(i)
            blobs.pop(i, None)
            posting = bucket.get(term)
            if posting is None:
                bucket[term] = {doc: tf}
            else:
                posting[doc] = tf
        self._invalidate()

    def remove(self, doc: int, terms: Iterable[str] | None = None) -> None:
        """Drop `doc`. `terms`: its terms if the caller knows them (else every bucket is decoded
        once to find them)."""
        if doc not in self:
            raise KeyError(doc)
        if terms is None:
            terms = self._terms_by_doc().pop(doc)
        elif self._doc_terms is not None:
            self._doc_terms.pop(doc, None)
        self.total_length -= self.lengths[doc]
        self.lengths[doc] = NO_DOC
        self.count -= 1
        for term in dict.fromkeys(terms):
            i = _bucket(term)
            bucket = self._bucket_of_index(i)
            posting = bucket[term]
            del posting[doc]
            if not posting:
                del bucket[term]
            self._blobs.pop(i, None)
        self._invalidate()

    def _invalidate(self) -> None:
        self._impacts.clear()
        self._weighted.clear()

    def _impact(self, term: str) -> tuple[dict[int, float], float]:
        """(doc -> impact, the largest impact) of a term in the index."""
        cached = self._impacts.get(term)
        if cached is not None:
            return cached
        k1, b = self.params.k1, self.params.b
        avg = self.total_length / self.count if self.count else 1.0
        lengths = self.lengths
        posting = self._bucket_of(term)[term]
        n, df = self.count, len(posting)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        weight, floor = idf * (k1 + 1.0), idf * self.params.delta
        impacts = {d: floor + weight * tf / (tf + k1 * (1.0 - b + b * lengths[d] / avg)) for d, tf in posting.items()}
        cached = (impacts, max(impacts.values()))
        self._impacts[term] = cached
        return cached

    def _weighted_impact(self, term: str, weights: Weights) -> tuple[dict[int, float], float]:
        """The impact list with every document's weight multiplied in (zero weights dropped),
        cached per weight table until the next add/remove."""
        table = self._weighted.get(weights.key)
        if table is None:
            if len(self._weighted) >= 4:
                self._weighted.clear()
            table = self._weighted[weights.key] = {}
        cached = table.get(term)
        if cached is None:
            impacts, _ = self._impact(term)
            weighted = {d: i * w for d, i in impacts.items() if (w := weights[d]) > 0.0}
            cached = table[term] = (weighted, max(weighted.values(), default=0.0))
        return cached

    def warm(self) -> None:
        """Compute every impact list now (what a long-lived server does once)."""
        for term in list(self.terms()):
            self._impact(term)

    def search(self, query: Iterable[str] | Mapping[str, float], limit: int, weights: Weights | None = None) -> list[tuple[int, float]]:
        """Top `limit` (doc, score), best first, exact. `query`: terms (repeats count) or term ->
        query weight. `weights` (see `Weights`) multiplies each document's score by its weight
        in [0, 1]; 0 drops it."""
        terms = query if isinstance(query, Mapping) else Counter(query)
        lists = []  # (bound, query weight, impacts)
        for term, qw in terms.items():
            if qw > 0.0 and term in self._bucket_of(term):
                impacts, top = self._impact(term) if weights is None else self._weighted_impact(term, weights)
                if impacts:
                    lists.append((top * qw, qw, impacts))
        lists.sort(key=itemgetter(0), reverse=True)
        remaining = [0.0] * (len(lists) + 1)
        for i in range(len(lists) - 1, -1, -1):
            remaining[i] = remaining[i + 1] + lists[i][0]
        scores: dict[int, float] = {}
        total = remaining[0]
        for i, (_, qw, impacts) in enumerate(lists):
            # (no score so far can exceed the bounds of the lists done, total - remaining[i])
            if i and len(scores) >= limit and remaining[i] < total - remaining[i] and remaining[i] < max(scores.values()):
                # MaxScore: once the lists left cannot lift a new document past the k-th best so
                # far, only documents already seen can still make the top k.
                threshold = heapq.nlargest(limit, scores.values())[-1]
                if remaining[i] < threshold:
                    scores = _finish_candidates(scores, lists[i:], remaining[i:], threshold, limit)
                    break
            if not scores and qw == 1.0:
                scores = dict(impacts)
                continue
            get = scores.get
            if qw == 1.0:
                for doc, impact in impacts.items():
                    scores[doc] = get(doc, 0.0) + impact
            else:
                for doc, impact in impacts.items():
                    scores[doc] = get(doc, 0.0) + qw * impact
        return heapq.nlargest(limit, scores.items(), key=itemgetter(1))


class _Stored(dict):
    """bucket -> its serialized form; a bucket not asked for yet takes it from `source`."""

    def __init__(self, source):
        super().__init__()
        self._source = source

    def __missing__(self, i: int):
        blob = self[i] = self._source[i]
        return blob


class Weights(dict):
    """doc -> weight in [0, 1], filled in on first use by `weight(doc)`; with `codes` (doc ->
    code, documents of one code weigh the same) by `weight(code)`, once per code. Documents with
    the same `key` must get the same weights: the index caches impact lists per key."""

    def __init__(self, key, weight: Callable[[int], float], codes=None):
        super().__init__()
        self.key, self.weight, self.codes = key, weight, codes
        self._by_code: dict[int, float] = {}

    def __missing__(self, doc: int) -> float:
        if self.codes is None:
            value = self[doc] = self.weight(doc)
            return value
        code = self.codes[doc]
        cached = self._by_code.get(code)
        if cached is None:
            cached = self._by_code[code] = self.weight(code)
        self[doc] = cached
        return cached


def _finish_candidates(scores: dict[int, float], lists, remaining: list[float], threshold: float, limit: int) -> dict[int, float]:
    """Complete the scores of the candidates that can still reach the top k: no document outside
    `scores` can (the lists left sum to less than `threshold`, the k-th best partial score). After
    each list, candidates whose score plus the bounds of the lists still left falls below the
    k-th best so far are dropped (partial scores only grow, so that k-th best is a lower bound)."""
    floor = threshold - remaining[0]
    candidates = {doc: score for doc, score in scores.items() if score >= floor}
    for j, (_, qw, impacts) in enumerate(lists):
        if len(impacts) < len(candidates):
            for doc, impact in impacts.items():
                if doc in candidates:
                    candidates[doc] += qw * impact
        else:
            get = impacts.get
            for doc in candidates:
                impact = get(doc)
                if impact is not None:
                    candidates[doc] += qw * impact
        rest = remaining[j + 1]
        if rest and len(candidates) > 2 * limit:
            floor = heapq.nlargest(limit, candidates.values())[-1] - rest
            candidates = {doc: score for doc, score in candidates.items() if score >= floor}
    return candidates
