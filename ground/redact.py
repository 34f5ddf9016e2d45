"""Secret redaction: replace credentials in text with `[REDACTED:<kind>]` before it is stored.

The rules live in `ground/secret_rules.py` (`RULES`, `covered_kinds()`); docs/redaction.md
lists the kinds. `redact(text, redact_extra=(), redact_allow=())`; `redact_extra` adds
regexes, each either a pattern string (kind `custom`) or a `(kind, pattern)` pair; a pattern
with a group named `secret` redacts only that group. `redact_allow` lists regexes for values
that must stay (e.g. a public test key): a match whose redacted part fully matches one of them
is kept. `secret_spans(text, …)` gives the same decisions as (start, end, kind) spans of `text`.

Redaction runs on the hot path (every original committed to CCR), so each built-in rule has
literal triggers: it runs only when one of them occurs in the lower-cased text. Text with no
trigger costs one `lower()` and one scan for all triggers (see bench/secrets_cost.py).
Every rule runs on the original text; overlapping matches merge into one placeholder (the
kind of the rule listed first).

What must hold: the output depends on the text (and the two lists) alone; the built-in rules
take time linear in the text, whatever it holds (tests/test_redact_linear.py checks the
searches against their plain definitions, bench/redact_speed.py times 1 MB adversarial
inputs); redaction is idempotent (a placeholder never matches). The patterns given in
`redact_extra` / `redact_allow` are the user's: their cost is theirs. This module imports
nothing from the project outside `ground`, so every engine can reuse it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
import re
from functools import lru_cache, partial

import regex

from ground.secret_rules import KEY_LINE, MULTI_LINE, NAME_REACH, RULES


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> regex.Pattern:
    return regex.compile(pattern, regex.V0)


def _trie(words: Iterable[str]) -> str:
    """One regex matching any of `words`, written as a trie (`s(?:k\\-(?:ant\\-|)|g\\.)`): at
    each place the engine follows one branch instead of trying every word, and a longer word
    is tried before its prefix, so a match is the longest word at its place."""
    tree: dict = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def branch(node: dict) -> str:
        alternatives = [re.escape(ch) + branch(child) for ch, child in sorted(node.items()) if ch]
        if not alternatives:
            return ""
        if "" in node:
            alternatives.append("")
        return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"

    return branch(tree)


_TRIGGERS = tuple(sorted({t for rule in RULES for t in rule.triggers}, key=len, reverse=True))
_ANY_TRIGGER = re.compile(_trie(_TRIGGERS))
"""All triggers in one scan (the stdlib engine, fastest at literal tries); it reports one
trigger per place, the longest, and resumes after it."""
_MAY_START_INSIDE = {t: sorted({u for i in range(len(t)) for u in _TRIGGERS
                                 if (u, i) != (t, 0) and (t[i:].startswith(u) or u.startswith(t[i:]))})
                     for t in _TRIGGERS}
"""For each trigger, the triggers that may start inside it ("sk-" in "sk-ant-", "key" in
"--api-key", or one running on past its end): the scan skips those places."""
DENSE = 64
"""A trigger found more often than this sends its rules over the whole text: one regex scan
is then cheaper than a window per line."""


def _trigger_hits(lower: str) -> dict[str, list[int] | None]:
    """For each trigger that occurs in `lower`: every place it occurs, or None when it occurs
    more than DENSE times. One scan finds which triggers occur (and how often); `str.find`
    gives the places of the sparse ones, those starting inside another included."""
    counts = Counter(_ANY_TRIGGER.findall(lower))
    checked = set(counts)
    for found in list(counts):
        for other in _MAY_START_INSIDE[found]:
            if other not in checked:
                checked.add(other)
                if other in lower:
                    counts[other] = DENSE + 1  # rare: its rules scan the whole text
    hits: dict[str, list[int] | None] = {}
    for trigger, n in counts.items():
        if n > DENSE:
            hits[trigger] = None
            continue
        places, at = [], lower.find(trigger)
        while at >= 0:
            places.append(at)
            at = lower.find(trigger, at + 1)
        hits[trigger] = places
    return hits


def _lines_around(text: str, positions: list[int]) -> list[tuple[int, int]]:
    """The lines holding `positions` (sorted), adjacent lines joined: (start, end) spans."""
    spans: list[tuple[int, int]] = []
    for at in positions:
        if spans and at <= spans[-1][1]:
            continue
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        end = len(text) if end < 0 else end
        if spans and start <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


Spans = Iterator[tuple[int, int]]
"""The (start, end) parts of the text one rule redacts, left to right."""


def _plain(pattern: regex.Pattern, text: str, lo: int, hi: int) -> Spans:
    """Non-overlapping matches; the `secret` group where the pattern has one and it matched."""
    has_group = "secret" in pattern.groupindex
    for match in pattern.finditer(text, lo, hi):
        yield match.span("secret") if has_group and match.start("secret") >= 0 else match.span()


def _assignment(pattern: regex.Pattern, text: str, lo: int, hi: int) -> Spans:
    """The values of every match of an assignment pattern at any place, nested ones included
    (what an overlapped search finds, minus matches whose bare value is followed by `(` or
    `[`), reading each value a bounded number of times. Matches are taken left to right; a
    match starting inside an earlier one (before its value) has the same value. A quoted
    value is not part of its match (the pattern reads it in a lookahead), so the search goes
    on from the value's start and finds the names nested in it; a nested match ends at or
    after the closing quote. A name nested in a bare value reaches past it only when it ends
    within NAME_REACH of the value's end and a quote or an assignment follows (group `more`):
    the search resumes there; a name deeper in has a bare value ending where this one does.
    A bare value followed by `(` or `[` is dropped: every name nested in it fails the same way."""
    secret, call, more = (pattern.groupindex[g] for g in ("secret", "call", "more"))
    at = lo
    while at < hi:
        for match in pattern.finditer(text, at, hi):
            regs = match.regs
            if regs[call][0] >= 0:
                continue
            start, end = regs[secret]
            yield start, end
            if regs[more][0] >= 0:
                at = max(start, end - NAME_REACH)
                break
        else:
            return


_KEY_LINE = regex.compile(KEY_LINE, regex.V0)


def _key_tail(pattern: regex.Pattern, text: str, lo: int, hi: int) -> Spans:
    """For each END line `pattern` finds, the run of key lines right above it through the END
    marker (at least one line). The runs above two END lines never share a line (an END line
    is not a key line), so each line is read at most once."""
    for match in pattern.finditer(text, lo, hi):
        start = match.start()
        while start > lo:
            above = max(text.rfind("\n", lo, start - 1) + 1, lo)
            if not _KEY_LINE.fullmatch(text, above, start - 1):
                break
            start = above
        if start < match.start():
            yield start, match.end()


_SEARCHES: dict[str, Callable[[regex.Pattern, str, int, int], Spans]] = {
    "plain": _plain, "assignment": _assignment, "key_tail": _key_tail}


def _scans(text: str, extra: Iterable[str | tuple[str, str]]
           ) -> list[tuple[str, Callable[[int, int], Spans], list[tuple[int, int]]]]:
    """(kind, search of a span, spans of `text` to search) for the rules worth running: a
    built-in only where one of its triggers occurs (on those lines for one-line rules), every
    extra everywhere (as a plain search)."""
    lower = text.lower()
    whole = [(0, len(text))]
    hits = _trigger_hits(lower)
    found = []
    for kind, triggers, pattern, search in RULES:
        places = [hits[t] for t in triggers if t in hits]
        if not places:
            continue
        # lower() may change the length of some characters: then places do not map back.
        if kind in MULTI_LINE or len(lower) != len(text) or any(p is None for p in places):
            spans = whole
        else:
            spans = _lines_around(text, sorted({p for of_trigger in places for p in of_trigger}))
        found.append((kind, partial(_SEARCHES[search], _compiled(pattern), text), spans))
    for item in extra:
        kind, pattern = ("custom", item) if isinstance(item, str) else item
        found.append((kind, partial(_plain, _compiled(pattern), text), whole))
    return found


def secret_spans(text: str, redact_extra: Iterable[str | tuple[str, str]] = (),
                 redact_allow: Iterable[str] = ()) -> list[tuple[int, int, str]]:
    """The (start, end, kind) spans of `text` that `redact` replaces, sorted, non-overlapping."""
    allowed = [_compiled(a) for a in redact_allow]
    found: list[tuple[int, int, int, str]] = []
    for rank, (kind, search, spans) in enumerate(_scans(text, redact_extra)):
        for lo, hi in spans:
            if allowed:
                found += ((start, end, rank, kind) for start, end in search(lo, hi)
                          if end > start and not any(a.fullmatch(text, start, end) for a in allowed))
            else:
                found += ((start, end, rank, kind) for start, end in search(lo, hi) if end > start)
    found.sort()
    merged: list[tuple[int, int, str]] = []
    ranks: list[int] = []
    for start, end, rank, kind in found:
        if merged and start < merged[-1][1]:
            last_start, last_end, last_kind = merged[-1]
            if rank < ranks[-1]:
                last_kind, ranks[-1] = kind, rank
            merged[-1] = (last_start, max(last_end, end), last_kind)
        else:
            merged.append((start, end, kind))
            ranks.append(rank)
    return merged


def redact(text: str, redact_extra: Iterable[str | tuple[str, str]] = (), redact_allow: Iterable[str] = ()) -> str:
    """Return `text` with every recognised secret replaced by `[REDACTED:<kind>]`, except the
    values that fully match a `redact_allow` pattern."""
    return replace_spans(text, secret_spans(text, redact_extra, redact_allow))


def replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, kind) span of `secret_spans` replaced by its placeholder."""
    if not spans:
        return text
    out, at = [], 0
    for start, end, kind in spans:
        out += (text[at:start], f"[REDACTED:{kind}]")
        at = end
    out.append(text[at:])
    return "".join(out)


def covered_kinds() -> list[str]:
    """The kinds of secret the built-in patterns recognise (documentation and tests)."""
    return list(dict.fromkeys(rule.kind for rule in RULES))
