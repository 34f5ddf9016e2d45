"""Near-duplicates by token overlap, shared by checkpoint (offering notes) and dream.

Two texts are near-duplicates when the Dice coefficient of their term sets (the memory
tokenizer's stemmed terms, so "Uses BM25" and "use bm25" agree) reaches DUPLICATE.
Pure and deterministic.
"""

from __future__ import annotations

from memory.tokenize import Tokenizer

DUPLICATE = 0.7


def terms(text: str, tokenizer: Tokenizer) -> frozenset[str]:
    return frozenset(tokenizer.tokens(text))


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Dice coefficient: 1.0 for equal sets, 0.0 when nothing is shared or a set is empty."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))
