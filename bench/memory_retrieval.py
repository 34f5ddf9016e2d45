"""Retrieval quality of memory search: the product path against fair BM25 baselines, one run.

    python bench/memory_retrieval.py [--corpus DIR] [--only scifact,cmrc,locomo] [--json FILE]
    python bench/memory_retrieval.py --tune     # BM25 k1/b grid on the dev half only

**Product path**: every labelled document is written as an entry of a real MEMORY.md (typed
sections, created dates, the format `ctxmill memory store` writes) and each query goes through
`memory.api.search` -- what `memory_search` and `ctxmill memory search` run: index file, sync,
recency decay with the default half-lives, top 10. Documents get a type (decision / gotcha /
fact / note) and an age of 0-729 days from a hash of their id, so decay really reorders
results; LoCoMo turns keep their real session dates (ages counted back from the last session).

**Fair baselines**, measured in the same run on the same documents (title and text joined):
  - bm25s + Snowball: `bm25s.tokenize(stopwords="en", stemmer=PyStemmer english)`;
  - bm25s + CJK bigrams: lowercase words, CJK runs as overlapping character bigrams;
  - rank-bm25 (BM25Okapi) fed the same tokens as each bm25s baseline.
Two informative rows, not the product: bm25s fed ctxmill's tokens, and ctxmill's index on its
own (same tokens, no decay, no sections).

Queries are split into **dev** and **held-out** halves by a hash of their id; tuning (`--tune`)
looks at dev only. Metrics: SciFact nDCG@10 (809 train queries), CMRC 2018 trial MRR@10 and
Recall@5 (1,002), LoCoMo Recall@5 at turn level (760 questions in 5 conversations, one memory
per conversation, category 5 excluded).
Needs the `bench` extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

import regex
import xxhash

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory import api
from memory.bm25 import Bm25Params, Index, weighted_terms
from memory.config import DEFAULT_BM25, MemoryConfig
from memory.entry import SECTIONS, Entry
from memory.markdown import format_entry, normalize_text
from memory.tokenize import Tokenizer

SPLITS = ("dev", "held-out")
_TYPES = ("decision", "gotcha", "fact", "note")


@dataclass
class Dataset:
    name: str
    docs: list[tuple[str, str, str]]  # (id, title, body)
    queries: list[tuple[str, str, set[str]]]  # (id, text, relevant doc ids)
    dates: dict[str, int] = field(default_factory=dict)  # doc id -> age in days (LoCoMo)
    group: str = ""


def corpus_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    env = os.environ.get("CTXMILL_CORPUS")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "corpus"


def split_of(dataset: str, query_id: str) -> str:
    return SPLITS[xxhash.xxh64_intdigest(f"{dataset}:{query_id}".encode()) & 1]


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
    queries = [(q["_id"], q["text"], qrels[q["_id"]]) for q in _jsonl(folder / queries_file) if q["_id"] in qrels]
    return Dataset(name, docs, queries)


def _session_date(text: str) -> date:
    return datetime.strptime(text.split(" on ", 1)[1].strip(), "%d %B, %Y").date()


def load_locomo(path: Path) -> list[Dataset]:
    out = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        docs, when = [], {}
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                day = _session_date(conv[f"{key}_date_time"])
                for turn in turns:
                    body = turn["text"] + (" " + turn["blip_caption"] if turn.get("blip_caption") else "")
                    docs.append((turn["dia_id"], turn["speaker"], body))
                    when[turn["dia_id"]] = day
        last = max(when.values())
        ids = {d[0] for d in docs}
        queries = []
        for n, qa in enumerate(sample["qa"]):
            evidence = {e.strip() for ev in qa.get("evidence", []) for e in ev.replace(";", ",").split(",")}
            evidence &= ids
            if qa.get("category") != 5 and evidence:
                queries.append((f"{sample['sample_id']}:{n}", qa["question"], evidence))
        ages = {doc: (last - day).days for doc, day in when.items()}
        out.append(Dataset("LoCoMo", docs, queries, dates=ages, group=sample["sample_id"]))
    return out


# --- the product path -------------------------------------------------------------------------


def memory_file(data: Dataset, today: date) -> tuple[str, dict[str, str]]:
    """MEMORY.md holding every document as an entry, and entry id -> document id."""
    sections: dict[str, list[str]] = {t: [] for t in _TYPES}
    ids = {}
    for n, (doc_id, title, body) in enumerate(data.docs):
        h = xxhash.xxh64_intdigest(f"{data.name}:{doc_id}".encode())
        kind = _TYPES[h % len(_TYPES)]
        age = data.dates.get(doc_id, (h >> 8) % 730)
        text = normalize_text(f"{title}: {body}" if data.name == "LoCoMo" else f"{title}\n{body}" if title else body)
        entry_id = f"m-{n:08x}"
        ids[entry_id] = doc_id
        sections[kind].append(format_entry(Entry(entry_id, kind, text, (today - timedelta(days=age)).isoformat())))
    parts = ["# Memory\n"]
    for kind, lines in sections.items():
        if lines:
            parts.append(f"\n## {SECTIONS[kind]}\n\n" + "".join(lines))
    return "".join(parts), ids


class ProductMemory:
    """A throwaway project whose MEMORY.md holds a dataset; `rank` runs memory.api.search."""

    def __init__(self, data: Dataset, root: Path, cache: Path, today: date):
        home = root / data.name / (data.group or "all") / ".ctxmill"
        home.mkdir(parents=True)
        text, self.ids = memory_file(data, today)
        (home / "MEMORY.md").write_text(text, encoding="utf-8")
        self.cfg = MemoryConfig(project_home=home, global_home=root / "global", cache_dir=cache)
        api.search(self.cfg, "warm up", limit=1)  # builds the index file once
        self.latencies: list[float] = []

    def rank(self, query: str, depth: int = 10) -> list[str]:
        start = time.perf_counter()
        hits = api.search(self.cfg, query, limit=depth)
        self.latencies.append((time.perf_counter() - start) * 1000)
        return [self.ids[h.entry.id] for h in hits]


def rank_product(data: Dataset, root: Path, cache: Path, today: date, latencies: list[float] | None = None) -> list[list[str]]:
    memory = ProductMemory(data, root, cache, today)
    ranked = [memory.rank(q) for _, q, _ in data.queries]
    if latencies is not None:
        latencies += memory.latencies
    return ranked


def rank_index(data: Dataset, tokenizer, params: Bm25Params = DEFAULT_BM25) -> list[list[str]]:
    """ctxmill's tokens and BM25 index alone: no decay, no sections (not the product)."""
    index = Index(params)
    for i, (_, title, body) in enumerate(data.docs):
        index.add(i, weighted_terms(tokenizer.tokens(f"{title}\n{body}"), [], params.heading_weight))
    return [[data.docs[d][0] for d, _ in index.search(tokenizer.tokens(q), 10)] for _, q, _ in data.queries]


# --- baselines --------------------------------------------------------------------------------

_CJK_RUN = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]+|[\p{L}\p{N}_]+")
_CJK_CHAR = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")


def bigram_tokens(text: str) -> list[str]:
    """The CJK-bigram baseline tokenizer: lowercase words; CJK runs as overlapping bigrams."""
    out = []
    for run in _CJK_RUN.findall(text.lower()):
        if _CJK_CHAR.match(run):
            out += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        else:
            out.append(run)
    return out


def snowball_tokens(texts: list[str]) -> list[list[str]]:
    import bm25s
    import Stemmer

    return bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), return_ids=False, show_progress=False)


def _texts(data: Dataset) -> list[str]:
    return [f"{t} {b}" for _, t, b in data.docs]


def tokens_for(kind: str, data: Dataset, ours: Tokenizer | None = None) -> tuple[list[list[str]], list[list[str]]]:
    texts, queries = _texts(data), [q for _, q, _ in data.queries]
    if kind == "snowball":
        return snowball_tokens(texts), snowball_tokens(queries)
    if kind == "bigram":
        return [bigram_tokens(t) for t in texts], [bigram_tokens(q) for q in queries]
    return [ours.tokens(t) for t in texts], [ours.tokens(q) for q in queries]


def rank_bm25s(data: Dataset, kind: str, ours: Tokenizer | None = None, depth: int = 10) -> list[list[str]]:
    import bm25s

    corpus_tokens, query_tokens = tokens_for(kind, data, ours)
    model = bm25s.BM25()
    model.index(corpus_tokens, show_progress=False)
    vocab = model.vocab_dict
    query_tokens = [[t for t in q if t in vocab] for q in query_tokens]
    answered = [i for i, q in enumerate(query_tokens) if q]
    results, _ = model.retrieve([query_tokens[i] for i in answered], k=min(depth, len(data.docs)), show_progress=False)
    ranked: list[list[str]] = [[] for _ in query_tokens]
    for i, row in zip(answered, results):
        ranked[i] = [data.docs[int(d)][0] for d in row]
    return ranked


def rank_rank_bm25(data: Dataset, kind: str, depth: int = 10) -> list[list[str]]:
    import numpy as np
    from rank_bm25 import BM25Okapi

    corpus_tokens, query_tokens = tokens_for(kind, data)
    model = BM25Okapi([t or [""] for t in corpus_tokens])
    ranked = []
    for q in query_tokens:
        scores = model.get_scores(q)
        top = np.argsort(-scores, kind="stable")[:depth]
        ranked.append([data.docs[int(i)][0] for i in top if scores[i] > 0])
    return ranked


# --- metrics ----------------------------------------------------------------------------------


def ndcg10(ranked: list[str], relevant: set[str]) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return dcg / ideal


def recall5(ranked: list[str], relevant: set[str]) -> float:
    return len(set(ranked[:5]) & relevant) / len(relevant)


def mrr10(ranked: list[str], relevant: set[str]) -> float:
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:10]) if d in relevant), 0.0)


def scores(datasets: list[Dataset], rank, metric) -> dict[str, float]:
    """Mean metric per split (dev, held-out) over every query of `datasets`."""
    values: dict[str, list[float]] = {s: [] for s in SPLITS}
    for data in datasets:
        for ranked, (qid, _, relevant) in zip(rank(data), data.queries):
            values[split_of(data.name, qid)].append(metric(ranked, relevant))
    return {s: sum(v) / len(v) for s, v in values.items() if v}


def tune(suites, ours: Tokenizer) -> None:
    """k1 / b grid on the dev half only; prints each setting's dev score per dataset."""
    cache: dict[str, list[str]] = {}

    class Cached:
        def tokens(self, text):
            if text not in cache:
                cache[text] = ours.tokens(text)
            return cache[text]

    rows = []
    for k1 in (0.9, 1.2, 1.5, 1.8):
        for b in (0.3, 0.4, 0.5, 0.6, 0.75):
            params = Bm25Params(k1, b, DEFAULT_BM25.heading_weight)
            vals = [scores(ds, lambda d, params=params: rank_index(d, Cached(), params), m)["dev"] for _, ds, m in suites]
            rows.append((sum(vals) / len(vals), k1, b, vals))
            print(f"k1={k1} b={b} " + " ".join(f"{v:.4f}" for v in vals), flush=True)
    best = max(rows)
    print(f"best dev mean {best[0]:.4f}: k1={best[1]} b={best[2]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", help="corpus root (default ../shared/corpus)")
    parser.add_argument("--only", default="scifact,cmrc,locomo", help="comma-separated datasets")
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument("--tune", action="store_true", help="grid-search k1 and b on the dev half instead")
    args = parser.parse_args(argv)
    root = corpus_dir(args.corpus) / "retrieval"
    if not root.is_dir():
        print(f"corpus not found at {root}; nothing to measure", file=sys.stderr)
        return 1
    cache = Path(tempfile.gettempdir()) / "ctxmill-bench-cache"
    ours = Tokenizer(cache)
    wanted = set(args.only.split(","))
    suites = []
    if "scifact" in wanted:
        suites.append(("SciFact nDCG@10", [load_beir(root / "scifact", "SciFact", "queries.jsonl", "qrels_train.tsv")], ndcg10))
    if "cmrc" in wanted:
        cmrc = [load_beir(root / "cmrc2018-zh", "CMRC", "queries_trial.jsonl", "qrels_trial.tsv")]
        suites += [("CMRC MRR@10", cmrc, mrr10), ("CMRC Recall@5", cmrc, recall5)]
    if "locomo" in wanted:
        suites.append(("LoCoMo Recall@5", load_locomo(root / "locomo" / "locomo_dev5.json"), recall5))
    if args.tune:
        tune([s for s in suites if s[0] != "CMRC Recall@5"], ours)
        return 0

    today = date.today()
    latencies: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        product_cache: dict[str, list[list[str]]] = {}

        def product(d: Dataset) -> list[list[str]]:
            key = f"{d.name}:{d.group}"
            if key not in product_cache:
                product_cache[key] = rank_product(d, Path(tmp), cache, today, latencies.setdefault(d.name, []))
            return product_cache[key]

        memo: dict[tuple, list[list[str]]] = {}

        def cached(name, fn):
            def rank(d: Dataset):
                key = (name, d.name, d.group)
                if key not in memo:
                    memo[key] = fn(d)
                return memo[key]
            return rank

        rankers = {
            "**ctxmill product path** (`memory.api.search`, decay on)": product,
            "bm25s + Snowball stemmer": cached("s-sb", lambda d: rank_bm25s(d, "snowball")),
            "bm25s + CJK bigrams": cached("s-bg", lambda d: rank_bm25s(d, "bigram")),
            "rank-bm25 + Snowball tokens": cached("r-sb", lambda d: rank_rank_bm25(d, "snowball")),
            "rank-bm25 + CJK-bigram tokens": cached("r-bg", lambda d: rank_rank_bm25(d, "bigram")),
            "(bm25s + ctxmill tokens)": cached("s-ours", lambda d: rank_bm25s(d, "ours", ours)),
            "(ctxmill index alone: no decay, no sections)": cached("index", lambda d: rank_index(d, ours)),
        }
        results: dict[str, dict[str, dict[str, float]]] = {}
        for name, rank in rankers.items():
            results[name] = {label: scores(ds, rank, metric) for label, ds, metric in suites}

    labels = [label for label, _, _ in suites]
    print(f"BM25 k1={DEFAULT_BM25.k1} b={DEFAULT_BM25.b}; queries per split: " + ", ".join(
        f"{label.split()[0]} {sum(split_of(d.name, q[0]) == 'dev' for d in ds for q in d.queries)}/"
        f"{sum(split_of(d.name, q[0]) != 'dev' for d in ds for q in d.queries)}"
        for label, ds, _ in suites if "Recall@5" not in label or "LoCoMo" in label
    ) + "\n")
    print("| ranker | " + " | ".join(f"{label} (dev / held-out)" for label in labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for name, row in results.items():
        print(f"| {name} | " + " | ".join(f"{row[label]['dev']:.4f} / {row[label]['held-out']:.4f}" for label in labels) + " |")
    print()
    for name, values in latencies.items():
        print(f"product-path search latency, {name} (each query once, first use of its terms included; "
              f"bench/memory_speed.py measures speed): p50 {statistics.median(values):.3f} ms, "
              f"p99 {sorted(values)[int(0.99 * (len(values) - 1))]:.3f} ms over {len(values)} queries")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "latency_ms": latencies}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
