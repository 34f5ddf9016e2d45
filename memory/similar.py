"""Near-duplicates by token overlap, shared by checkpoint (offering notes) and dream.

Two texts are near-duplicates when the Dice coefficient of their term sets (the memory
tokenizer's stemmed terms, so "Uses BM25" and "use bm25" agree) reaches DUPLICATE.
`says_as_much` is what dream asks before it drops one text for another: near-duplicates with the
same particulars (`same_facts`), the kept one holding all but under LOST_SHARE of the dropped
one's terms ("Don't worry about perfection" is not "Don't worry about scale", nor is "Inventory
ledger must be append-only" said by "This must be append-only"). Pure and deterministic.
"""

from __future__ import annotations

from functools import lru_cache

import regex

from memory.tokenize import Tokenizer

DUPLICATE = 0.7
LOST_SHARE = 0.15


def terms(text: str, tokenizer: Tokenizer) -> frozenset[str]:
    return frozenset(tokenizer.tokens(text))


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Dice coefficient: 1.0 for equal sets, 0.0 when nothing is shared or a set is empty."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


_WORD = regex.compile(r"[\w][\w./\\:+#@-]*")
_NUMBER = regex.compile(r"\d+(?:[.,:]\d+)*")
_SENTENCE_END = regex.compile(r"[.!?:;]\s*$|^\s*$")


def _words(text: str) -> list[tuple[str, bool]]:
    """(word with trailing punctuation stripped, starts a sentence) for each word of `text`."""
    out = []
    for m in _WORD.finditer(text):
        word = m.group().rstrip(".:-/\\")
        if word:
            out.append((word, bool(_SENTENCE_END.search(text[max(0, m.start() - 3):m.start()]))))
    return out


_NAME_MARK = regex.compile(r"[/\\._:@#+\d]|.[\p{Lu}-]")


def _names(words: list[tuple[str, bool]]) -> set[str]:
    """Words that name something: paths, file and dotted names, identifiers (`_`, `::`, inner
    capitals as in SQLite or camelCase, digits), and capitalized words inside a sentence."""
    return {word.casefold() for word, first in words
            if _NAME_MARK.search(word) or (word[0].isupper() and not first)}


def numbers_in(text: str) -> tuple[str, ...]:
    """The numbers `text` states, in order: texts that `same_facts` pairs state the same."""
    return tuple(_NUMBER.findall(text))


@lru_cache(maxsize=65536)
def _facts(text: str) -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    """(numbers, casefolded words, names) of a text; cached: dream compares one text with many."""
    words = _words(text)
    return numbers_in(text), frozenset(w.casefold() for w, _ in words), frozenset(_names(words))


def same_facts(a: str, b: str) -> bool:
    """Whether two texts state the same particulars: the same numbers in the same order, and
    every name or path either text holds (as `_names` finds them) in both. "worker 1 retries
    3 times" and "worker 2 retries 6 times" differ; "Use BM25" and "use bm25 for search" agree."""
    numbers_a, words_a, names_a = _facts(a)
    numbers_b, words_b, names_b = _facts(b)
    return numbers_a == numbers_b and names_a <= words_b and names_b <= words_a


def says_as_much(kept_terms: frozenset[str], kept_text: str, dropped_terms: frozenset[str], dropped_text: str) -> bool:
    """Whether the kept text says all the dropped one says (see the module docstring)."""
    return (overlap(kept_terms, dropped_terms) >= DUPLICATE
            and len(dropped_terms - kept_terms) < LOST_SHARE * len(dropped_terms) + (not dropped_terms)
            and same_facts(kept_text, dropped_text))
