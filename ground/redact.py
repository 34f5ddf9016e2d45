"""Secret redaction: replace credentials in text with `[REDACTED:<kind>]` before it is stored.

The rules live in `ground/secret_rules.py` (`RULES`, `covered_kinds()`); docs/redaction.md
lists the kinds. `redact(text, redact_extra=(), redact_allow=())`; `redact_extra` adds
regexes, each either a pattern string (kind `custom`) or a `(kind, pattern)` pair; a pattern
with a group named `secret` redacts only that group. `redact_allow` lists regexes for values
that must stay (e.g. a public test key): a match whose redacted part fully matches one of them
is kept. `secret_spans(text, …)` gives the same decisions as (start, end, kind) spans of `text`.

Redaction runs on the hot path (every original committed to CCR), so each built-in rule has
literal triggers: it runs only when one of them occurs in the lower-cased text. Text with no
trigger costs one `lower()` and one Aho-Corasick pass for all triggers (see
bench/secrets_cost.py, bench/redact_speed.py --corpus). Nothing is compiled at import: each
pattern on its first use.
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

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache, partial
from typing import TYPE_CHECKING

from ground.secret_rules import CONCATENATED, KEY_LINE, MULTI_LINE, NAME_REACH, RULES

if TYPE_CHECKING:
    import regex
    from ahocorasick_rs import AhoCorasick


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> regex.Pattern:
    """`pattern` compiled on its first use (`regex` itself is imported then: a process that
    never redacts, such as a hook that only reads, never pays for it)."""
    import regex

    return regex.compile(pattern, regex.V0)


_TRIGGERS = tuple(sorted({t for rule in RULES for t in rule.triggers}, key=len, reverse=True))
_RULES_OF: dict[str, tuple[int, ...]] = {t: tuple(i for i, rule in enumerate(RULES) if t in rule.triggers)
                                         for t in _TRIGGERS}
"""For each trigger, the rules (their places in `RULES`) it sends to work."""
DENSE = 64
"""A trigger found more often than this sends its rules over the whole text: one regex scan
is then cheaper than a window per line."""


@lru_cache(maxsize=1)
def _automaton() -> AhoCorasick:
    """All triggers in one Aho-Corasick automaton (ahocorasick-rs): one pass over the text finds
    every place of every trigger, those starting inside another included (5x faster than one
    regex alternation of them on the corpus's tool outputs). Built on the first redaction."""
    from ahocorasick_rs import AhoCorasick

    return AhoCorasick(list(_TRIGGERS))


_SURROGATES = {code: 0xFFFD for code in range(0xD800, 0xE000)}


def _trigger_hits(lower: str) -> dict[str, list[int] | None]:
    """For each trigger that occurs in `lower`: every place it occurs, in order, or None when it
    occurs more than DENSE times."""
    hits: dict[str, list[int]] = {}
    try:
        found = _automaton().find_matches_as_indexes(lower, overlapping=True)
    except UnicodeEncodeError:  # a lone surrogate (no trigger holds one): scanned as U+FFFD, same places
        found = _automaton().find_matches_as_indexes(lower.translate(_SURROGATES), overlapping=True)
    for index, start, _ in found:
        hits.setdefault(_TRIGGERS[index], []).append(start)
    return {trigger: None if len(places) > DENSE else places for trigger, places in hits.items()}


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


def _key_tail(pattern: regex.Pattern, text: str, lo: int, hi: int) -> Spans:
    """For each END line `pattern` finds, the run of key lines right above it through the END
    marker (at least one line). The runs above two END lines never share a line (an END line
    is not a key line), so each line is read at most once."""
    for match in pattern.finditer(text, lo, hi):
        start = match.start()
        while start > lo:
            above = max(text.rfind("\n", lo, start - 1) + 1, lo)
            if not _compiled(KEY_LINE).fullmatch(text, above, start - 1):
                break
            start = above
        if start < match.start():
            yield start, match.end()


def _block(pattern: regex.Pattern, text: str, lo: int, hi: int) -> Spans:
    """For each block scalar head `pattern` finds, the lines below it indented deeper than its
    own line (blank lines between them included), from the first one's text to the last one's
    end; in a JSON string the lines are those its escaped line breaks make, up to the string's
    closing quote. A head inside a block already yielded is skipped, so each line is read once."""
    covered, line_break = lo, _compiled(_LINE_BREAK_AT)
    for match in pattern.finditer(text, lo, hi):
        if match.start() < covered:
            continue
        brk = line_break.match(text, match.end())
        if brk is None or text[brk.end():brk.end() + 1] not in " \t":
            continue  # the next line is not indented: no value below this head
        sep = brk.group().lstrip("\r") if brk.group().endswith("\n") and "\\" not in brk.group() else brk.group()
        sep = "\n" if "\\" not in sep else sep
        depth = sep.count("\\") // (2 if "r" in sep else 1)
        head = text.rfind(sep, 0, match.start())
        indent = _indent(text, head + len(sep) if head >= 0 else 0)
        at, first, last = brk.end(), -1, -1
        while at < len(text):
            end = text.find(sep, at)
            end, closed = _closed(text, at, len(text) if end < 0 else end, depth)
            content = _indent(text, at)
            line = text[at:end].strip()
            if line and content <= indent:
                break
            if line:
                first = at + content if first < 0 else first
                last = at + len(text[at:end].rstrip())
            if closed or end >= len(text):
                break
            at = end + len(sep)
        if first >= 0:
            covered = last
            yield first, last


_LINE_BREAK_AT = r"\r?\n|(?:\\++r)?+\\++n"


def _closed(text: str, at: int, end: int, depth: int) -> tuple[int, bool]:
    """Where a line from `at` to `end` ends, and whether a closing quote ends it: in a JSON
    string (`depth` backslashes escape its line breaks) a quote escaped by fewer closes it."""
    if not depth:
        return end, False
    quote = text.find('"', at, end)
    while quote >= 0:
        escapes = quote - len(text[:quote].rstrip("\\"))
        if escapes < depth:
            return quote, True
        quote = text.find('"', quote + 1, end)
    return end, False


def _indent(text: str, at: int) -> int:
    """How many blanks (spaces, tabs) the line starting at `at` opens with."""
    n = at
    while n < len(text) and text[n] in " \t":
        n += 1
    return n - at


_SEARCHES: dict[str, Callable[[regex.Pattern, str, int, int], Spans]] = {
    "plain": _plain, "assignment": _assignment, "key_tail": _key_tail, "block": _block}


def _scans(text: str, extra: Iterable[str | tuple[str, str]]
           ) -> list[tuple[str, Callable[[int, int], Spans], list[tuple[int, int]]]]:
    """(kind, search of a span, spans of `text` to search) for the rules worth running: a
    built-in only where one of its triggers occurs (on those lines for one-line rules), every
    extra everywhere (as a plain search)."""
    lower = text.lower()
    whole = [(0, len(text))]
    hits = _trigger_hits(lower)
    found: list[tuple[str, Callable[[int, int], Spans], list[tuple[int, int]]]] = []
    for kind, triggers, pattern, search in (RULES[i] for i in sorted({i for t in hits for i in _RULES_OF[t]})):
        places = [hits[t] for t in triggers if t in hits]
        known = [p for p in places if p is not None]
        # lower() may change the length of some characters: then places do not map back.
        if kind in MULTI_LINE or len(lower) != len(text) or len(known) != len(places):
            spans = whole
        else:
            spans = _lines_around(text, sorted({p for of_trigger in known for p in of_trigger}))
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
    return _continued(text, merged)


CONTINUED_STRINGS = 8
"""How many concatenated strings after a secret are taken as the rest of it, at most."""


def _continued(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """`spans` with each secret that ends a quoted string continued by concatenation
    (`CONCATENATED`) reaching over the strings that continue it (spans it reaches into join it)."""
    out: list[tuple[int, int, str]] = []
    for start, end, kind in spans:
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end), out[-1][2])
            continue
        for _ in range(CONTINUED_STRINGS):
            more = _compiled(CONCATENATED).match(text, end)
            if more is None:
                break
            end = more.end("more")
        out.append((start, end, kind))
    return out


def redact(text: str, redact_extra: Iterable[str | tuple[str, str]] = (), redact_allow: Iterable[str] = ()) -> str:
    """Return `text` with every recognised secret replaced by `[REDACTED:<kind>]`, except the
    values that fully match a `redact_allow` pattern."""
    return replace_spans(text, secret_spans(text, redact_extra, redact_allow))


def replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, kind) span of `secret_spans` replaced by its placeholder."""
    if not spans:
        return text
    out: list[str] = []
    at = 0
    for start, end, kind in spans:
        out += (text[at:start], f"[REDACTED:{kind}]")
        at = end
    out.append(text[at:])
    return "".join(out)


def covered_kinds() -> list[str]:
    """The kinds of secret the built-in patterns recognise (documentation and tests)."""
    return list(dict.fromkeys(rule.kind for rule in RULES))
