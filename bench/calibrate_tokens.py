"""Fit and check the o200k_base token estimator against the exact count on the shared corpus.

    python bench/calibrate_tokens.py            # table of held-out errors + speed
    python bench/calibrate_tokens.py --fit-only # just the coefficients to paste into compress/token_counters.py

Held-out protocol (2-fold by file): transcript files are split into two halves (alternating in
sorted order); coefficients fitted on one half score the other, and vice versa, so every error
in the table comes from files the fit never saw. The printed constants are fitted on all files.
Fit: least squares minimising sum((est - exact)^2 / exact), each category weighted equally.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from token_corpus import CATEGORIES, corpus_dir, file_samples, transcript_files

from compress.token_counters import FEATURE_NAMES, estimate_tokens, estimator_features, exact_counter
from ctxmill.settings import tiktoken_cache

Sample = tuple[int, str, int, tuple[int, ...]]  # (fold, category, exact tokens, features)
MIN_TOKENS_PER_SAMPLE = 50  # smaller samples are left out of the per-sample distribution


def solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting for a small dense system."""
    n = len(rhs)
    a = [row[:] + [rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= factor * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def fit(samples: list[Sample]) -> list[float]:
    """Weighted least squares without intercept; weights 1/exact, categories balanced."""
    totals: dict[str, int] = defaultdict(int)
    for _, category, exact, _ in samples:
        totals[category] += exact
    k = len(FEATURE_NAMES)
    normal = [[0.0] * k for _ in range(k)]
    rhs = [0.0] * k
    for _, category, exact, features in samples:
        weight = 1.0 / (max(exact, 1) * totals[category])
        for i in range(k):
            rhs[i] += weight * features[i] * exact
            for j in range(k):
                normal[i][j] += weight * features[i] * features[j]
    return solve(normal, rhs)


def predict(coefficients: list[float], features: tuple[int, ...]) -> float:
    return sum(c * f for c, f in zip(coefficients, features))


def load_samples(root: Path) -> tuple[list[Sample], list[str]]:
    count = exact_counter(tiktoken_cache())
    if count is None:
        raise SystemExit("no exact o200k_base counter: pip install bpe-openai")
    samples: list[Sample] = []
    for index, path in enumerate(transcript_files(root)):
        for category, text in file_samples(path):
            samples.append((index % 2, category, count.count(text), estimator_features(text)))
    return samples, [str(p) for p in transcript_files(root)]


def held_out_table(samples: list[Sample]) -> list[str]:
    """Markdown rows: per category aggregate error and per-sample p10/p50/p90, all held out."""
    fold_coefficients = {fold: fit([s for s in samples if s[0] != fold]) for fold in (0, 1)}
    rows = ["| category | samples | chars | o200k tokens | aggregate error | per-sample p10 / p50 / p90 |",
            "|---|---:|---:|---:|---:|---|"]
    for category in CATEGORIES:
        chosen = [s for s in samples if s[1] == category]
        if not chosen:
            continue
        exact = sum(s[2] for s in chosen)
        estimated = sum(predict(fold_coefficients[s[0]], s[3]) for s in chosen)
        errors = sorted(predict(fold_coefficients[s[0]], s[3]) / s[2] - 1 for s in chosen if s[2] >= MIN_TOKENS_PER_SAMPLE)
        deciles = statistics.quantiles(errors, n=10) if len(errors) >= 2 else [errors[0]] * 9 if errors else [0.0] * 9
        chars = sum(s[3][0] for s in chosen)
        rows.append(
            f"| {category} | {len(chosen)} | {chars:,} | {exact:,} | {100 * (estimated / exact - 1):+.1f}% "
            f"| {100 * deciles[0]:+.0f}% / {100 * deciles[4]:+.0f}% / {100 * deciles[8]:+.0f}% |"
        )
    return rows


def speed_rows(root: Path) -> list[str]:
    """MB/s of the estimator and the exact counter on the first MB of mixed corpus text."""
    texts = [text for path in transcript_files(root) for _, text in file_samples(path)]
    mixed = "".join(texts[::7])[:1_000_000]
    megabytes = len(mixed.encode("utf-8", "surrogatepass")) / 1e6
    rows, exact = [], exact_counter(tiktoken_cache())
    for name, count in (("estimate_tokens", estimate_tokens), (exact.name, exact.count)):
        best = min(_timed(count, mixed) for _ in range(20 if count is estimate_tokens else 3))
        rows.append(f"| {name} | {1000 * best / megabytes:.1f} ms/MB | {megabytes / best:,.0f} MB/s |")
    return ["| counter | time | throughput |", "|---|---:|---:|", *rows]


def _timed(count, text: str) -> float:
    start = time.perf_counter()
    count(text)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit-only", action="store_true", help="print the fitted coefficients only")
    args = parser.parse_args()
    root = corpus_dir()
    if root is None:
        print("shared corpus not found (../shared/corpus or $CTXMILL_CORPUS)", file=sys.stderr)
        return 1
    samples, _ = load_samples(root)
    coefficients = fit(samples)
    print("# fitted on all files; paste into compress/token_counters.py")
    print(f"_COEFFICIENTS = ({', '.join(f'{c:.4f}' for c in coefficients)})  # {', '.join(FEATURE_NAMES)}")
    if args.fit_only:
        return 0
    print("\nHeld-out error (2-fold by file), estimate vs o200k_base:\n")
    print("\n".join(held_out_table(samples)))
    print("\nSpeed on 1 MB of mixed corpus text:\n")
    print("\n".join(speed_rows(root)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
