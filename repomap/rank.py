"""Rank a repository's files for a prompt.

A file's score is the sum, over the prompt's terms it shares, of the term's rarity among the
files (`log(1 + N / df)`), counted twice when the term is in the file's path and once when it
is in a defined name (a code identifier the prompt names whole counts three times more; a file that
defines many different words counts each less, as BM25 does for long documents); plus a
bonus for the files the session touched most recently; plus half the score of the scored files
that use names the file defines ("what uses what", one step from the best files). Files with
no score follow, those that define the most first. Ties break on the path, so the order is a
function of the inputs alone.
"""

from __future__ import annotations

import math
from collections import defaultdict

import regex

from repomap.outline import Outline

_WORD = regex.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IDENTIFIER = regex.compile(r"_|[a-z][A-Z]|[A-Za-z][0-9]")
"""A word written as code (snake_case, camelCase, a digit inside), not as English."""
_PARTS = regex.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
STOP = frozenset("""the and for with that this from into what when where which while about above after again
all also any are because been before being below between both but can could did does doing down
each few had has have having her here him his how its just more most not now off once only other
our out over own same she should some such than their them then there these they those through too
under until very was were who why will would you your please make sure use using need want like
file files code fix add let get set new run see""".split())
RECENT_BONUS = 6.0
RECENT_DECAY = 0.7
SEEDS = 20
SPREAD = 0.5
DISTINCTIVE_MAX_FILES = 3
"""A name defined in more files than this says nothing about which one a user means."""


_SUFFIXES = ("ations", "ation", "ions", "ion", "ings", "ing", "ers", "er", "ed", "es", "s")


def stem(word: str) -> str:
    """A crude English stem, so "redaction" meets "redact" and "keys" meets "key"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """Lower-case, stemmed search terms of a text: each identifier whole and its camel/snake parts."""
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


def _file_terms(path: str, o: Outline) -> tuple[set[str], set[str]]:
    return terms(path.replace("/", " ").replace(".", " ").replace("-", " ")), terms(" ".join(d.name for d in o.defs))


def rank(outlines: dict[str, Outline], prompt: str, recent: list[str]) -> list[str]:
    """Every path of `outlines`, best first for `prompt` and the recently touched `recent`
    (repository-relative paths, most recent first)."""
    wanted = terms(prompt)
    whole = {stem(w.lower()) for w in _WORD.findall(prompt) if _IDENTIFIER.search(w)}
    score: dict[str, float] = defaultdict(float)
    if wanted:
        indexed = {path: _file_terms(path, o) for path, o in outlines.items()}
        df: dict[str, int] = defaultdict(int)
        for path_terms, def_terms in indexed.values():
            for t in (path_terms | def_terms) & wanted:
                df[t] += 1
        n = max(1, len(outlines))
        mean = max(1.0, sum(len(d) for _, d in indexed.values()) / n)
        for path, (path_terms, def_terms) in indexed.items():
            shared = (path_terms | def_terms) & wanted
            if not shared:
                continue
            per_def = 1.0 / (0.5 + 0.5 * len(def_terms) / mean)
            for t in shared:
                weight = math.log(1 + n / df[t])
                score[path] += weight * ((2.0 if t in path_terms else 0.0)
                                         + per_def * ((1.0 if t in def_terms else 0.0)
                                                      + (3.0 if t in whole and t in def_terms else 0.0)))
    for i, path in enumerate(dict.fromkeys(p for p in recent if p in outlines)):
        score[path] += RECENT_BONUS * RECENT_DECAY ** i
    _spread(outlines, score)
    size = {path: len(o.defs) for path, o in outlines.items()}
    return sorted(outlines, key=lambda p: (-round(score.get(p, 0.0), 9), -size[p], p))


def _spread(outlines: dict[str, Outline], score: dict[str, float]) -> None:
    """Pass part of the best files' scores to the files whose distinctive names they use."""
    seeds = sorted((p for p in score if score[p] > 0), key=lambda p: (-score[p], p))[:SEEDS]
    if not seeds:
        return
    definers: dict[str, list[str]] = defaultdict(list)
    for path, o in outlines.items():
        for d in o.defs:
            if len(d.name) >= 4:
                definers[d.name].append(path)
    passed: dict[str, float] = defaultdict(float)
    for seed in seeds:
        used = {p for name in outlines[seed].refs
                for p in definers.get(name, ()) if len(definers[name]) <= DISTINCTIVE_MAX_FILES and p != seed}
        for target in used:
            passed[target] += SPREAD * score[seed] / len(used) ** 0.5
    for path, extra in passed.items():
        score[path] += extra
