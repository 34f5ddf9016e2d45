"""Retrieval quality of memory search against bm25s and rank-bm25, printed as a markdown table.

    python bench/memory_retrieval.py [--corpus DIR] [--tune]

Datasets (from ../shared/corpus/retrieval, or $CTXMILL_CORPUS/retrieval):
  SciFact train qrels, nDCG@10 (title = heading field);
  CMRC 2018 trial, Recall@5 and MRR@10, with bigram-only and jieba-only variants of our tokenizer;
  LoCoMo turn-level evidence, one index per conversation, category 5 excluded, Recall@5.
Baselines use their default tokenizers (bm25s.tokenize; rank-bm25 on str.split), and bm25s is
also run on our tokens to separate tokenizer from scorer. `--tune` grid-searches k1, b and the
heading weight on all three datasets (how the defaults in memory.config were chosen).
Needs the `bench` extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory.bm25 import Bm25Params, Index, weighted_terms  # noqa: E402
from memory.config import DEFAULT_BM25  # noqa: E402
from memory.tokenize import Tokenizer  # noqa: E402


@dataclass
class Dataset:
    name: str
    docs: list[tuple[str, str, str]]  # (id, heading, body)
    queries: list[tuple[str, set[str]]]  # (text, relevant doc ids)
    group: str = ""  # LoCoMo: one index per conversation


def corpus_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    env = os.environ.get("CTXMILL_CORPUS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "corpus"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _qrels(path: Path) -> dict[str, set[str]]:
    rel: dict[str, set[str]] = {}
    for line in path.read_text().splitlines()[1:]:
        qid, did, score = line.split("\t")
        if int(score) > 0:
            rel.setdefault(qid, set()).add(did)
    return rel


def load_beir(folder: Path, name: str, queries_file: str, qrels_file: str) -> Dataset:
    docs = [(d["_id"], d.get("title", ""), d["text"]) for d in _jsonl(folder / "corpus.jsonl")]
    qrels = _qrels(folder / qrels_file)
    queries = [(q["text"], qrels[q["_id"]]) for q in _jsonl(folder / queries_file) if q["_id"] in qrels]
    return Dataset(name, docs, queries)


def load_locomo(path: Path) -> list[Dataset]:
    out = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        docs = []
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    body = turn["text"] + (" " + turn["blip_caption"] if turn.get("blip_caption") else "")
                    docs.append((turn["dia_id"], turn["speaker"], body))
        ids = {d[0] for d in docs}
        queries = []
        for qa in sample["qa"]:
            evidence = {e.strip() for ev in qa.get("evidence", []) for e in ev.replace(";", ",").split(",")}
            evidence &= ids
            if qa.get("category") != 5 and evidence:
                queries.append((qa["question"], evidence))
        out.append(Dataset("LoCoMo", docs, queries, group=sample["sample_id"]))
    return out


# --- rankers: each takes a Dataset and returns, per query, a ranked list of doc ids ----------


def rank_ours(data: Dataset, tokenizer: Tokenizer, params: Bm25Params, depth: int = 10) -> list[list[str]]:
    index = Index(params)
    for i, (_, heading, body) in enumerate(data.docs):
        index.add(i, weighted_terms(tokenizer.tokens(body), tokenizer.tokens(heading), params.heading_weight))
    return [[data.docs[d][0] for d, _ in index.search(tokenizer.tokens(q), depth)] for q, _ in data.queries]


def rank_bm25s(data: Dataset, depth: int = 10, tokenizer: Tokenizer | None = None) -> list[list[str]]:
    import bm25s

    texts = [f"{h} {b}" for _, h, b in data.docs]
    queries = [q for q, _ in data.queries]
    if tokenizer is None:
        corpus_tokens = bm25s.tokenize(texts, return_ids=False, show_progress=False)
        query_tokens = bm25s.tokenize(queries, return_ids=False, show_progress=False)
    else:
        corpus_tokens = [tokenizer.tokens(t) for t in texts]
        query_tokens = [tokenizer.tokens(q) for q in queries]
    model = bm25s.BM25()
    model.index(corpus_tokens, show_progress=False)
    vocab = model.vocab_dict
    query_tokens = [[t for t in q if t in vocab] for q in query_tokens]
    k = min(depth, len(texts))
    answered = [i for i, q in enumerate(query_tokens) if q]
    results, _ = model.retrieve([query_tokens[i] for i in answered], k=k, show_progress=False)
    ranked: list[list[str]] = [[] for _ in query_tokens]
    for i, row in zip(answered, results):
        ranked[i] = [data.docs[int(d)][0] for d in row]
    return ranked


def rank_rank_bm25(data: Dataset, depth: int = 10) -> list[list[str]]:
    import numpy as np
    from rank_bm25 import BM25Okapi

    model = BM25Okapi([f"{h} {b}".split(" ") for _, h, b in data.docs])
    ranked = []
    for q, _ in data.queries:
        scores = model.get_scores(q.split(" "))
        top = np.argsort(-scores)[:depth]
        ranked.append([data.docs[int(i)][0] for i in top])
    return ranked


# --- metrics ---------------------------------------------------------------------------------


def ndcg10(ranked: list[str], relevant: set[str]) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return dcg / ideal


def recall5(ranked: list[str], relevant: set[str]) -> float:
    return len(set(ranked[:5]) & relevant) / len(relevant)


def mrr10(ranked: list[str], relevant: set[str]) -> float:
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:10]) if d in relevant), 0.0)


def mean_metric(datasets: list[Dataset], rankings: list[list[list[str]]], metric) -> float:
    values = [metric(r, rel) for data, ranks in zip(datasets, rankings) for r, (_, rel) in zip(ranks, data.queries)]
    return sum(values) / len(values)


def evaluate(datasets: list[Dataset], rank, metrics) -> list[float]:
    rankings = [rank(d) for d in datasets]
    return [mean_metric(datasets, rankings, m) for m in metrics]


class _CachedTokenizer:
    """Tokenizes each distinct text once (the grid search re-indexes the same texts many times)."""

    def __init__(self, tokenizer: Tokenizer):
        self._tokenizer, self._seen = tokenizer, {}

    def tokens(self, text: str) -> list[str]:
        if text not in self._seen:
            self._seen[text] = self._tokenizer.tokens(text)
        return self._seen[text]


def tune(suites, tokenizer: Tokenizer) -> None:
    """Grid over k1, b, heading weight; prints the mean of the headline metric of each dataset."""
    tokenizer = _CachedTokenizer(tokenizer)
    rows = []
    for k1 in (0.6, 0.9, 1.2, 1.5):
        for b in (0.4, 0.6, 0.75, 0.9):
            for hw in (1.0, 2.0, 3.0):
                params = Bm25Params(k1, b, hw)
                vals = [evaluate(ds, lambda d: rank_ours(d, tokenizer, params), [m])[0] for ds, m in suites]
                rows.append((sum(vals) / len(vals), k1, b, hw, vals))
                print(f"k1={k1} b={b} hw={hw} " + " ".join(f"{v:.4f}" for v in vals), flush=True)
    best = max(rows)
    print(f"best mean {best[0]:.4f}: k1={best[1]} b={best[2]} heading_weight={best[3]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", help="corpus root (default ../shared/corpus)")
    parser.add_argument("--tune", action="store_true", help="grid-search BM25 parameters instead")
    args = parser.parse_args(argv)
    root = corpus_dir(args.corpus) / "retrieval"
    if not root.is_dir():
        print(f"corpus not found at {root}; nothing to measure", file=sys.stderr)
        return 1
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ctxmill"
    ours = Tokenizer(cache)
    scifact = [load_beir(root / "scifact", "SciFact", "queries.jsonl", "qrels_train.tsv")]
    cmrc = [load_beir(root / "cmrc2018-zh", "CMRC", "queries_trial.jsonl", "qrels_trial.tsv")]
    locomo = load_locomo(root / "locomo" / "locomo_dev5.json")
    if args.tune:
        tune([(scifact, ndcg10), (cmrc, mrr10), (locomo, recall5)], ours)
        return 0

    params = DEFAULT_BM25
    rankers = {
        "ctxmill": lambda d: rank_ours(d, ours, params),
        "bm25s (default tokenizer)": rank_bm25s,
        "rank-bm25 (default tokenizer)": rank_rank_bm25,
        "bm25s + ctxmill tokenizer": lambda d: rank_bm25s(d, tokenizer=ours),
    }
    cmrc_variants = {
        "ctxmill, bigrams only": Tokenizer(cache, words=False, chars=False),
        "ctxmill, jieba only": Tokenizer(cache, bigrams=False, chars=False),
        "ctxmill, chars + bigrams": Tokenizer(cache, words=False),
        "ctxmill, bigrams + jieba": Tokenizer(cache, chars=False),
    }
    print(f"BM25 k1={params.k1} b={params.b} heading_weight={params.heading_weight}\n")
    print("| ranker | SciFact nDCG@10 | CMRC Recall@5 | CMRC MRR@10 | LoCoMo Recall@5 |")
    print("|---|---|---|---|---|")
    for name, rank in rankers.items():
        (sci,) = evaluate(scifact, rank, [ndcg10])
        c_r5, c_mrr = evaluate(cmrc, rank, [recall5, mrr10])
        (loc,) = evaluate(locomo, rank, [recall5])
        print(f"| {name} | {sci:.4f} | {c_r5:.4f} | {c_mrr:.4f} | {loc:.4f} |", flush=True)
    for name, tokenizer in cmrc_variants.items():
        c_r5, c_mrr = evaluate(cmrc, lambda d: rank_ours(d, tokenizer, params), [recall5, mrr10])
        print(f"| {name} | | {c_r5:.4f} | {c_mrr:.4f} | |", flush=True)
    print(f"\nqueries: SciFact {len(scifact[0].queries)}, CMRC {len(cmrc[0].queries)}, "
          f"LoCoMo {sum(len(d.queries) for d in locomo)} in {len(locomo)} conversations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
