"""The one place that writes and parses ctxmill markers.

    [ctxmill: {summary} · deep_expand("{key}")]     replaces cut content (format_marker)
    <<ctxmill: {summary} · deep_expand("{key}")>>   one-line note for a superseded tool input
    [ctxmill: {text}]                               names no key (format_inline): a later cut
                                                    of the same original (lines_omitted), a cut
                                                    line (chars_cut) or blob (blob_cut), the rest
                                                    of a folder's entries (entries_omitted), a
                                                    reminder (nudges)

`find_placeholders` finds every marker, note and cut notice in a text, keyed or not: text that
stands for content ctxmill cut, so copied into a file or a command it would replace real content.

A marker may also sit inside a JSON string (crush_json puts one where array items were cut, so
the output stays valid JSON); serialized there its quotes read `deep_expand(\\"{key}\\")`, and
the parser accepts that form too, so markers in JSON text resolve like any other.

What must hold:
- A summary is always one line without `[`, `]`, `<`, `>` or control characters: the writer
  escapes them reversibly (`\\\\`, `\\n`, `\\r`, else `\\uXXXX`, e.g. `[` -> `\\u005b`), so
  find_markers(format_marker(s, k)) gives back exactly (s, k) for every str s, including
  lone surrogates, and the marker text is always valid UTF-8.
- Inline text is written as given (a directory name may hold `]`): it carries no key and is
  never parsed back into a key; `find_placeholders` recognises the cut notices by their fixed
  wording, in linear time (an `entries_omitted` folder name of at most 4,096 characters; one
  holding "/ (" is recognised up to there).
- Parsing is linear in the text: a marker body never contains `[` or `]` (a note body never
  `<` or `>`), not even escaped, so a scan from one candidate start stops before the next
  candidate start and no character is scanned twice for the same kind (possessive
  quantifiers, no backtracking).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ccr.keys import is_valid_key

_SEPARATOR = ' · deep_expand("'
_JSON_SEPARATOR = ' · deep_expand(\\"'
_MARKER_OPEN, _MARKER_CLOSE = "[ctxmill: ", '")]'
_NOTE_OPEN, _NOTE_CLOSE = "<<ctxmill: ", '")>>'

_SHORT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r"}
_SHORT_UNESCAPES = {"n": "\n", "r": "\r"}
# Characters that end a line for str.splitlines, other controls, and surrogates (unencodable).
_NEEDS_ESCAPE = re.compile(r"[\\\[\]<>\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_ESCAPE_SEQUENCE = re.compile(r"\\(u[0-9a-f]{4}|.)", re.DOTALL)

_FIND = re.compile(
    r"\[ctxmill: (?P<marker>(?:[^\[\]\n\\]|\\[^\[\]<>\n])*+)\]"
    r"|<<ctxmill: (?P<note>(?:[^<>\n\\]|\\[^\[\]<>\n])*+)>>"
)


@dataclass(frozen=True)
class Marker:
    kind: str  # "marker" | "note"
    summary: str
    key: str
    start: int
    end: int


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _unescape_char(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) == 5:
        return chr(int(code[1:], 16))
    return _SHORT_UNESCAPES.get(code, code)


def escape_summary(summary: str) -> str:
    return _NEEDS_ESCAPE.sub(_escape_char, summary)


def unescape_summary(escaped: str) -> str:
    return _ESCAPE_SEQUENCE.sub(_unescape_char, escaped)


def _checked(key: str) -> str:
    if not is_valid_key(key):
        raise ValueError(f"not a CCR key: {key!r}")
    return key


def format_marker(summary: str, key: str) -> str:
    """`[ctxmill: {summary} · deep_expand("{key}")]` for content that was cut."""
    return f"{_MARKER_OPEN}{escape_summary(summary)}{_SEPARATOR}{_checked(key)}{_MARKER_CLOSE}"


def format_note(summary: str, key: str) -> str:
    """`<<ctxmill: {summary} · deep_expand("{key}")>>` for a superseded tool input."""
    return f"{_NOTE_OPEN}{escape_summary(summary)}{_SEPARATOR}{_checked(key)}{_NOTE_CLOSE}"


def format_inline(text: str) -> str:
    """`[ctxmill: {text}]`, a notice that names no key."""
    return f"{_MARKER_OPEN}{text}]"


def lines_omitted(count: int) -> str:
    """`[ctxmill: N lines omitted]`: a later cut of an original whose marker came earlier."""
    return format_inline(f"{count:,} line{'s' if count != 1 else ''} omitted")


def chars_cut(count: int) -> str:
    """`[ctxmill: N chars cut]` in the middle of a long kept line."""
    return format_inline(f"{count:,} chars cut")


def blob_cut(kind: str, size: str) -> str:
    """`[ctxmill: image/png base64 blob, 103 KB cut]` in place of a base64 run."""
    return format_inline(f"{kind} base64 blob, {size} cut")


def entries_omitted(count: int, folder: str, total: int) -> str:
    """`[ctxmill: 55 more in src/pkg/ (60 entries)]` after the entries of a folder that were kept."""
    return format_inline(f"{count:,} more in {folder}/ ({total:,} entries)")


_CUT_NOTICE = re.compile(r"\[ctxmill: (?:[\d,]++ lines? omitted|[\d,]++ chars cut|[\w.+-]{1,60}(?:/[\w.+-]{1,60})?+ "
                         r"base64 blob, [\d.,]++ (?:KB|chars) cut)\]")
_ENTRIES_START = re.compile(r"\[ctxmill: [\d,]++ more in ")
_ENTRIES_END = re.compile(r"/ \([\d,]++ entries\)\]")
_MAX_FOLDER = 4096


def _entries_notices(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each `entries_omitted` notice: a start and the nearest end after it on
    the same line, with at most _MAX_FOLDER characters between (the folder name, which may hold
    anything but a line break). Starts and ends are each found once: linear in the text."""
    if " entries)]" not in text:
        return
    breaks = [m.start() for m in re.finditer("\n", text)]
    ends = iter(_ENTRIES_END.finditer(text))
    end = next(ends, None)
    for start in _ENTRIES_START.finditer(text):
        while end is not None and end.start() < start.end():
            end = next(ends, None)
        if end is None:
            return
        gap = end.start() - start.end()
        same_line = bisect.bisect_left(breaks, start.end()) == bisect.bisect_left(breaks, end.start())
        if gap <= _MAX_FOLDER and same_line:
            yield start.start(), end.end()


def find_placeholders(text: str) -> list[Marker]:
    """Every marker and note (keyed) and every cut notice (key "") in `text`, by position."""
    if "ctxmill: " not in text:
        return []
    found = {m.start: m for m in _iter_markers(text)}
    notices = [(m.start(), m.end()) for m in _CUT_NOTICE.finditer(text)] + list(_entries_notices(text))
    for start, end in notices:
        found.setdefault(start, Marker("marker", text[start + len(_MARKER_OPEN):end - 1], "", start, end))
    return [found[start] for start in sorted(found)]


def _split_body(body: str) -> tuple[str, str] | None:
    """(summary, key) from `{escaped summary} · deep_expand("{key}")` or its JSON-string
    form `… · deep_expand(\\"{key}\\")`, else None."""
    cut = body.rfind(_SEPARATOR)
    if cut >= 0:
        tail = body[cut + len(_SEPARATOR) :]
        key = tail[:-2]
        if tail[-2:] == '")' and is_valid_key(key):
            return unescape_summary(body[:cut]), key
        return None
    cut = body.rfind(_JSON_SEPARATOR)
    if cut < 0:
        return None
    tail = body[cut + len(_JSON_SEPARATOR) :]
    key = tail[:-3]
    if tail[-3:] != '\\")' or not is_valid_key(key):
        return None
    return unescape_summary(_json_unescape(body[:cut])), key


def _json_unescape(text: str) -> str:
    try:
        return json.loads(f'"{text}"')
    except ValueError:
        return text


def _iter_markers(text: str) -> Iterator[Marker]:
    if _SEPARATOR not in text and _JSON_SEPARATOR not in text:
        return
    for match in _FIND.finditer(text):
        kind = "marker" if match.group("marker") is not None else "note"
        parts = _split_body(match.group(kind))
        if parts is not None:
            yield Marker(kind, parts[0], parts[1], match.start(), match.end())


def find_markers(text: str) -> list[Marker]:
    """Every well-formed marker and note in `text`, in order of position."""
    return list(_iter_markers(text))


def has_marker(text: str) -> bool:
    """True when `text` already carries a marker or note (stages skip such content)."""
    return next(_iter_markers(text), None) is not None
