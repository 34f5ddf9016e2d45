"""One tokenizer for memory documents and queries (both go through `Tokenizer.tokens`).

English and code: lowercase words; identifiers are kept whole and also split on `_` and
camelCase (`memory_store` -> `memory_store`, `memori`, `store`); parts and plain words are
Porter-stemmed; a short stopword list and lone letters are dropped.

CJK (Han incl. all extension blocks, Hiragana, Katakana, Hangul): every character, every
character bigram, and for Chinese the jieba words of three or more characters (two-character
words are already the bigrams). Single-character queries therefore match. jieba is loaded
only when a Han character is seen (see `memory.cjk`).
"""

from __future__ import annotations

from pathlib import Path

import regex

from memory.cjk import Segmenter
from memory.stem import stem

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\u30fc\u3005"
_TOKEN = regex.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[[\p{{L}}\p{{N}}_]--[{_CJK}]]+)", regex.V1)
_HAN = regex.compile(r"\p{Han}")
_CAMEL = regex.compile(r"\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+|\p{N}+|[^\p{L}\p{N}]+")
_IDENT_SPLIT = regex.compile(r"\p{Ll}\p{Lu}|\p{Lu}\p{Lu}\p{Ll}|_")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves""".split()
)


def _word_tokens(word: str, out: list[str]) -> None:
    lower = word.lower()
    if lower in STOPWORDS or (len(lower) == 1 and not lower.isdigit()):
        return
    if not _IDENT_SPLIT.search(word):
        out.append(stem(lower))
        return
    out.append(lower)
    for part in _CAMEL.findall(word):
        part = part.lower()
        if part.isalnum() and len(part) > 1 and part not in STOPWORDS:
            out.append(stem(part))


class Tokenizer:
    """Turns text into index terms. `words=False` / `bigrams=False` give the CJK ablations."""

    def __init__(self, cache_dir: Path | None = None, *, bigrams: bool = True, words: bool = True, chars: bool = True):
        self._segmenter = Segmenter(cache_dir)
        self._bigrams, self._words, self._chars = bigrams, words, chars

    def _cjk_tokens(self, run: str, out: list[str]) -> None:
        if self._chars or len(run) == 1:
            out.extend(run)
        if self._bigrams:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        if self._words and _HAN.search(run):
            minimum = 3 if self._bigrams else 2 if self._chars else 1
            out.extend(w for w in self._segmenter.cut(run) if len(w) >= minimum)

    def tokens(self, text: str) -> list[str]:
        out: list[str] = []
        for match in _TOKEN.finditer(text):
            word = match.group("word")
            if word is not None:
                _word_tokens(word, out)
            else:
                self._cjk_tokens(match.group("cjk"), out)
        return out
