"""Search terms of prompts, paths and defined names: lower-case, crudely stemmed words.

Each identifier counts whole and by its camelCase / snake_case parts; English stop words and
words under three letters are dropped. `is_code` tells a word written as code (snake_case,
camelCase, a digit inside) from an English one.
"""

from __future__ import annotations

import regex

_WORD = regex.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARTS = regex.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_CODE = regex.compile(r"_|[a-z][A-Z]|[A-Za-z][0-9]")
_SUFFIXES = ("ations", "ation", "ions", "ion", "ings", "ing", "ers", "er", "ed", "es", "s")
STOP = frozenset("""the and for with that this from into what when where which while about above after again
all also any are because been before being below between both but can could did does doing down
each few had has have having her here him his how its just more most not now off once only other
our out over own same she should some such than their them then there these they those through too
under until very was were who why will would you your please make sure use using need want like
file files code fix add let get set new run see""".split())


def stem(word: str) -> str:
    """A crude English stem, so "redaction" meets "redact" and "reports" meets "report"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    out: set[str] = set()
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
