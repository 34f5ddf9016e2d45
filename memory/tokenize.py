"""One tokenizer for memory documents and queries (both go through `Tokenizer.tokens`).

Text is first NFKC-normalised, so full-width and other compatibility forms meet their plain
spelling ("ＡＰＩ" -> "API", "ｔｅｓｔ１" -> "test1", "ﬁle" -> "file").

English and code. A *compound* is a run of letters and digits whose pieces are joined by
`-` `_` `.` `:` `/` `@` `'` with no space (`node:18-alpine`, `memory_store`, `UTF-8`). Each
piece is split further into *parts* at camelCase (`getUserName` -> get User Name, `HTTPServer`
-> HTTP Server) and at every letter/digit boundary (`base64Encode` -> base 64 Encode, `OAuth2`
-> O Auth 2, `100ms` -> 100 ms). A word that is one part gives one term. Otherwise the terms
are, lowercased and deduplicated within the compound:
  - every part, except lone letters and stopwords (lone digits stay: `UTF-8` -> 8);
  - every pair of neighbouring parts joined, unless both are numbers or one is a stopword
    (`OAuth2` -> oauth, auth2; `base64Encode` -> base64, 64encode; `node:18-alpine` -> node18);
  - the whole compound joined, unless it is all numbers (`UTF-8` -> utf8, `pre-commit` ->
    precommit, `memory_store` -> memorystore, the same term as `memoryStore`).
So `utf8`, `utf-8` and `UTF8` share utf8, `oauth` finds `OAuth2`, `node18` finds `node:18-alpine`,
`100ms` finds `100 ms`, `pre-commit` finds `precommit`. Every term is Porter-stemmed (only
alphabetic terms of 3+ letters change). `C++`, `g++`, `C#`, `F#` are terms of their own.
Plain words: lowercase, stemmed, a short stopword list and lone letters dropped.

CJK (Han incl. all extension blocks, Hiragana, Katakana, Hangul): every character, every
character bigram, and for Chinese the jieba words of three or more characters (two-character
words are already the bigrams). Single-character queries therefore match. jieba is loaded
only when a Han character is seen (see `memory.cjk`).

Text is tokenized chunk by chunk between spaces, so the terms of a query word are the terms
that word gets inside any document (tests/memory/test_tokenize.py checks this property).

Two sets of patterns give these terms: Unicode ones (the `regex` module: letter, number and
script classes) for any text, and stdlib `re` ones for text made of ASCII, the common CJK
letters (`PLAIN_CJK`) and characters that separate words (punctuation, symbols, spaces): most
English and Chinese text, and the queries people type in either. Both give such text the same
terms (tests/memory/test_tokenize.py checks every code point and generated text), so `regex`
is imported only when other text is seen: a search for an English or Chinese query does not
pay for it.
"""

from __future__ import annotations

import re
import unicodedata
from collections import namedtuple
from functools import cache
from pathlib import Path

from memory.stem import stem

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (see tests/memory/test_cli.py)
if TYPE_CHECKING:
    from memory.cjk import Segmenter

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\u30fc\u3005"
_CONNECTORS = "-_.:/@'\u2019"
_CONNECTOR = re.compile(f"[{_CONNECTORS}]")

# Letters of _CJK: Hangul Jamo, Hiragana, Katakana, Hangul, CJK Unified Ideographs (and A, B), as
# inclusive ranges, the block of most Chinese text first. PLAIN_HAN: the Han letters among them.
PLAIN_CJK = (("\u4e00", "\u9fff"), ("\u1100", "\u11ff"), ("\u3005", "\u3005"), ("\u3041", "\u3096"), ("\u309d", "\u309f"),
             ("\u30a1", "\u30fa"), ("\u30fc", "\u30ff"), ("\u3131", "\u318e"), ("\u31f0", "\u31ff"), ("\u3400", "\u4dbf"),
             ("\ua960", "\ua97c"), ("\uac00", "\ud7a3"), ("\ud7b0", "\ud7c6"), ("\ud7cb", "\ud7fb"),
             ("\U00020000", "\U0002a6df"))
PLAIN_HAN = (("\u4e00", "\u9fff"), ("\u3005", "\u3005"), ("\u3400", "\u4dbf"), ("\U00020000", "\U0002a6df"))
# Blocks of CJK symbols (radicals, enclosed and square forms) that _CJK counts as CJK.
_CJK_SYMBOLS = (("\u2e80", "\u2fdf"), ("\u3200", "\u33ff"), ("\U00016fe0", "\U00016fff"), ("\U0001f200", "\U0001f2ff"))


def _within(ranges: tuple[tuple[str, str], ...], ch: str) -> bool:
    return any(low <= ch <= high for low, high in ranges)


def separates_words(ch: str) -> bool:
    """A character outside ASCII and PLAIN_CJK that both paths treat as a space: punctuation, a
    symbol, a space, a control or format character, but no CJK symbol and not the connector `’`."""
    category = unicodedata.category(ch)
    return (category[0] in "PSZ" or category in ("Cc", "Cf")) and ch != "\u2019" and not _within(_CJK_SYMBOLS, ch)


def plain_form(text: str) -> str | None:
    """`text` (NFKC-normalized) for the stdlib patterns, its characters that separate words
    replaced by spaces, so that what is left outside ASCII is PLAIN_CJK letters and `’`; None
    when `text` has a character only the Unicode patterns read."""
    if text.isascii():
        return text
    spaces = {}
    for ch in set(text):
        if ch <= "\x7f" or ch == "\u2019" or _within(PLAIN_CJK, ch):
            continue
        if not separates_words(ch):
            return None
        spaces[ord(ch)] = " "
    return text.translate(spaces) if spaces else text


# The compiled patterns of one path: token, the parts of a piece, one simple part, and
# has_han(CJK run) (truthy when the run has a Han character).
_Patterns = namedtuple("_Patterns", "token part simple has_han")
_PLAIN = _Patterns(
    re.compile(  # on plain_form(text): every character outside ASCII but `’` is a CJK letter
        f"(?P<cjk>[^\\x00-\\x7f\u2019]+)|(?P<word>[A-Za-z0-9]+(?:[{_CONNECTORS}][A-Za-z0-9]+)*)"
        f"(?P<suffix>\\+\\+(?![A-Za-z+]|[^\\x00-\\x7f\u2019])|#(?![A-Za-z0-9#]|[^\\x00-\\x7f\u2019]))?"
    ),
    re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+"),
    re.compile(r"[A-Z]?[a-z]*"),
    lambda run: any(_within(PLAIN_HAN, ch) for ch in run),
)


@cache
def unicode_patterns() -> _Patterns:
    """The patterns for any text (imports `regex`, about 10 ms)."""
    import regex

    alnum = rf"[[\p{{L}}\p{{N}}\p{{M}}]--[{_CJK}]]"
    return _Patterns(
        regex.compile(
            rf"(?P<cjk>[{_CJK}]+)"
            # a compound: pieces joined by connectors; `++` or `#` may end it (kept for `C++`, `C#`: see tokens)
            rf"|(?P<word>{alnum}+(?:[{_CONNECTORS}]{alnum}+)*)(?P<suffix>\+\+(?![\p{{L}}+])|#(?![\p{{L}}\p{{N}}#]))?",
            regex.V1,
        ),
        # Parts of a piece: acronym before a capitalised word, (capitalised) lowercase run, acronym, digits.
        regex.compile(
            r"\p{Lu}[\p{Lu}\p{M}]*(?=\p{Lu}[\p{Ll}\p{M}])|[\p{Lu}\p{Lt}]?[\p{Ll}\p{Lo}\p{Lm}\p{M}]+|[\p{Lu}\p{Lt}][\p{Lu}\p{Lt}\p{M}]*|\p{N}+",
            regex.V1,
        ),
        regex.compile(r"[\p{Lu}\p{Lt}]?[\p{Ll}\p{Lo}\p{Lm}\p{M}]*", regex.V1),  # one part: lower, Capitalised
        regex.compile(r"\p{Han}").search,
    )


STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves""".split()
)


def _keep(part: str) -> bool:
    return (len(part) > 1 or part.isdigit()) and part not in STOPWORDS


def _joinable(part: str) -> bool:
    return len(part) == 1 or part not in STOPWORDS  # `state-of-the-art` gives no "stateof"; `IPv6` gives ipv


def compound_terms(word: str) -> tuple[list[str], bool]:
    """The terms of one compound (see the module docstring) and whether the first of them is
    the whole compound as written (a plain word is its own whole); `word` has no spaces."""
    patterns = _PLAIN if word.isascii() else unicode_patterns()
    if patterns.simple.fullmatch(word):
        lower = word.lower()
        return ([stem(lower)], True) if _keep(lower) else ([], False)
    parts = [p.lower() for piece in _CONNECTOR.split(word) for p in patterns.part.findall(piece)]
    if len(parts) == 1:
        return ([stem(parts[0])], True) if _keep(parts[0]) else ([], False)
    whole = not all(p.isdigit() for p in parts)
    terms = dict.fromkeys([stem("".join(parts))] if whole else [])
    terms.update(dict.fromkeys(stem(p) for p in parts if _keep(p)))
    for left, right in zip(parts, parts[1:]):
        if not (left.isdigit() and right.isdigit()) and _joinable(left) and _joinable(right):
            terms[stem(left + right)] = None
    return list(terms), whole


def _has_known(run: str, minimum: int, known) -> bool:
    return any(known(run[i:j]) for i in range(len(run)) for j in range(i + minimum, len(run) + 1))


class Tokenizer:
    """Turns text into index terms. `words=False` / `bigrams=False` give the CJK ablations."""

    def __init__(self, cache_dir: Path | None = None, *, bigrams: bool = True, words: bool = True, chars: bool = True):
        self._cache_dir = cache_dir
        self._segmenter: Segmenter | None = None
        self._bigrams, self._words, self._chars = bigrams, words, chars
        self._compounds: dict[str, tuple[list[str], bool]] = {}

    def _cut(self, run: str) -> list[str]:
        if self._segmenter is None:
            from memory.cjk import Segmenter  # only Chinese text needs jieba

            self._segmenter = Segmenter(self._cache_dir)
        return self._segmenter.cut(run)

    def _cjk_tokens(self, run: str, out: list[str], has_han, known) -> None:
        if self._chars or len(run) == 1:
            out.extend(run)
        if self._bigrams:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        minimum = 3 if self._bigrams else 2 if self._chars else 1
        if self._words and len(run) >= minimum and has_han(run):  # a shorter run has no such word
            if known is None or minimum < 3 or _has_known(run, minimum, known):
                out.extend(w for w in self._cut(run) if len(w) >= minimum)

    def _terms(self, text: str, known=None):
        """(terms, whole) per compound or CJK run; CJK terms and `C++` / `C#` count as whole."""
        if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
        plain = plain_form(text)
        patterns = _PLAIN if plain is not None else unicode_patterns()
        cache = self._compounds
        for match in patterns.token.finditer(text if plain is None else plain):
            word = match.group("word")
            if word is None:
                out: list[str] = []
                self._cjk_tokens(match.group("cjk"), out, patterns.has_han, known)
                yield out, False
                continue
            suffix = match.group("suffix")
            if suffix and (suffix == "++" or len(word) == 1) and word[-1].isalpha():
                yield [word.lower() + suffix], True  # C++, g++, notepad++, C#, F#
                continue
            found = cache.get(word)
            if found is None:
                found = compound_terms(word)
                if len(cache) < 200_000:
                    cache[word] = found
            yield found

    def tokens(self, text: str) -> list[str]:
        """The index terms of `text`, in order (a document's terms; a query's, unweighted)."""
        out: list[str] = []
        for terms, _ in self._terms(text):
            out.extend(terms)
        return out

    def query_terms(self, text: str, fragment_weight: float = 1.0, known=None) -> dict[str, float]:
        """term -> query weight: the same terms as `tokens(text)`, each counted as often, but the
        parts and joined pairs of a compound weigh `fragment_weight` (its whole weighs 1), so
        an entry holding the word as written ranks above one sharing only a fragment of it.
        `known(s)`, when given, is true for every term of 3+ characters outside ASCII that the
        searched entries have: a CJK run none of whose substrings is known is not cut with
        jieba (its words of 3+ characters match no entry), and those words are left out."""
        weights: dict[str, float] = {}
        get = weights.get
        for terms, whole in self._terms(text, known):
            if not whole or len(terms) == 1:
                for term in terms:
                    weights[term] = get(term, 0.0) + 1.0
                continue
            weights[terms[0]] = get(terms[0], 0.0) + 1.0
            for term in terms[1:]:
                weights[term] = get(term, 0.0) + fragment_weight
        return weights
