"""Search terms of prompts, paths and defined names: lower-case, crudely stemmed words.

Each identifier counts whole and by its camelCase / snake_case parts; English stop words and
words under three letters are dropped. Text in Chinese, Japanese or Korean gets the terms memory
search gives it (`memory.tokenize`: each character of a one-character run and each bigram; no
jieba words, which a bigram already matches), so `发票` in a prompt meets `发票` in a path.
`code_words` are the terms of the words written as code (snake_case, camelCase, a digit inside);
`mentioned_paths` the paths a prompt names (`src/app.py`, `./README.md`, `/abs/path/x.ts`).
"""

from __future__ import annotations

import re

from ground.ascii_first import Pattern

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_CODE = re.compile(r"_|[a-z][A-Z]|[A-Za-z][0-9]")
_SUFFIXES = ("ations", "ation", "ions", "ion", "ings", "ing", "ers", "er", "ed", "es", "s")
STOP = frozenset(
    """the and for with that this from into what when where which while about above after again
all also any are because been before being below between both but can could did does doing down
each few had has have having her here him his how its just more most not now off once only other
our out over own same she should some such than their them then there these they those through too
under until very was were who why will would you your please make sure use using need want like
file files code fix add let get set new run see""".split()
)


def stem(word: str) -> str:
    """A crude English stem, so "redaction" meets "redact" and "reports" meets "report"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


_CJK_TOKENIZER = None
_PATH = Pattern(r"(?:[\w.~-]*/)+[\w.-]+|[\w-]+\.[A-Za-z][A-Za-z0-9]{0,7}\b")


def _cjk_terms(text: str) -> list[str]:
    global _CJK_TOKENIZER
    if _CJK_TOKENIZER is None:
        from memory.tokenize import Tokenizer

        _CJK_TOKENIZER = Tokenizer(None, bigrams=True, words=False, chars=False)
    return [t for t in _CJK_TOKENIZER.tokens(text) if not t.isascii()]


def terms(text: str) -> set[str]:
    out: set[str] = set(_cjk_terms(text)) if not text.isascii() else set()
    for word in _WORD.findall(text):
        low = word.lower()
        if len(low) >= 3 and low not in STOP:
            out.add(stem(low))
        for part in _PARTS.findall(word):
            p = part.lower()
            if len(p) >= 3 and p not in STOP:
                out.add(stem(p))
    return out


def code_words(text: str) -> set[str]:
    """The terms of the words of `text` written as code."""
    return {stem(w.lower()) for w in _WORD.findall(text) if _CODE.search(w)}


def mentioned_paths(text: str) -> list[str]:
    """The path-like words of `text` (with a folder or an extension), in order, without a
    leading `./`, `/` or trailing punctuation."""
    found = []
    for match in _PATH.findall(text):
        path = match.rstrip(".,:;").removeprefix("./")
        if path and path not in found:
            found.append(path)
    return found
