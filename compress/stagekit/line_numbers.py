"""Line-number prefixes of numbered file reads, and thinning them.

Hosts number every line of a file read (Claude Code `     12→`, `cat -n`, `nl` and the text
editor tool `    12\t`, OpenCode `12: `, and PowerShell's `'{0,4}: {1}' -f $i, $_` as Codex
writes it on Windows `  12: `). A prefix costs about three tokens, a third of a short line of
code. Thinned, only the first line and every `every`-th line keep their numbers: positions stay
easy to find, and every line's content stays verbatim (the lines an agent copies into edits are
untouched). A `12: ` prefix could be SWE-agent's `12:` before a line indented by one space or
more, whose first space is code; SWE-agent writes an empty or unindented line as `12:` or
`12:code`, so a read is taken for `12: ` numbering only when every numbered line has the space
and some line has code right after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ccr.markers import find_markers

NUMBER_PREFIX = r"[ \t]{0,12}\d{1,9}(?:\t|→|:[ \t])"
"""A line-number prefix of a numbered file read (`  12→`, `12\t`, `12: `)."""
_NUMBERED = re.compile(f"^{NUMBER_PREFIX}")

# The scans below read "\n" + text and match a prefix with the newline before it: re finds a
# pattern that opens with a literal character by searching for that character, about twice as
# quick as trying `^` (re.MULTILINE) at every position. A prefix holds no newline, so the matches
# are those of `^` on each line of the text, its first line included.
_THINNABLE = re.compile(r"(\n[ \t]{0,12}(\d{1,9})(?:\t|→))")
_COLON_SPACED = re.compile(r"(\n[ \t]{0,12}(\d{1,9}): )")
_COLON = re.compile(r"\n[ \t]{0,12}\d{1,9}:")
_COLON_CODE = re.compile(r"\n[ \t]{0,12}\d{1,9}: \S")
_PREFIXES = re.compile(f"\n{NUMBER_PREFIX}")

NUMBERS_THINNED = "line numbers shown on"
"""How the summary of a thinned read's marker opens (`[ctxmill: line numbers shown on line 1 and
every 10th line up to 775; line text unchanged · deep_expand("…")]`)."""

MIN_NUMBERED_SHARE = 0.9
"""A text is a numbered read when at least this share of its lines carry consecutive numbers."""


@dataclass(frozen=True, slots=True)
class Thinned:
    text: str
    first: int
    last: int
    every: int


def thin_line_numbers(text: str, every: int = 10, min_lines: int = 20) -> Thinned | None:
    """`text` with the number prefix of every numbered line removed except the first's and those
    whose number is a multiple of `every`; None unless `text` is a numbered read: at least
    `min_lines` lines, `MIN_NUMBERED_SHARE` of them numbered, the numbers counting up by one.
    Lines without a number (a host's notes around the file) are kept as they are."""
    lines = text.count("\n") + 1
    if lines < min_lines:
        return None
    parts = _numbering(text, lines)
    if parts is None:
        return None
    # parts: the text's pieces between prefixes, each prefix (with its newline) and its number.
    # The numbers count up by one, so the k-th numbered line's is first + k.
    count = len(parts) // 3
    first = int(parts[2])
    prefixes = parts[1::3]
    parts[1::3] = ["\n"] * count
    parts[2::3] = [""] * count
    step = abs(every)  # n % every == 0 exactly when n % abs(every) == 0 (every 0 raises, as % does)
    for k in (0, *range(-first % step, count, step)):
        parts[3 * k + 1] = prefixes[k]
    return Thinned("".join(parts)[1:], first, first + count - 1, every)


def _numbering(text: str, lines: int) -> list[str] | None:
    """The prefix that numbers `text` (`→` or tab, else `12: ` as the module docstring says),
    as `"\n" + text` split by it (each prefix and its number captured), or None: the prefix must
    number at least `MIN_NUMBERED_SHARE` of the lines, counting up by one. The `12: ` scans run
    only when the other prefix does not number the text."""
    scanned = "\n" + text
    for prefix in (_THINNABLE, _COLON_SPACED):
        if prefix is _COLON_SPACED and not _COLON_CODE.search(scanned):
            continue
        parts = prefix.split(scanned)
        count = len(parts) // 3
        if prefix is _COLON_SPACED and count != len(_COLON.findall(scanned)):
            continue
        if count and count >= MIN_NUMBERED_SHARE * lines:
            numbers = list(map(int, parts[2::3]))
            if numbers == list(range(numbers[0], numbers[0] + count)):
                return parts
    return None


def content_chars(text: str) -> int:
    """The characters of `text` without its lines' line-number prefixes: the size of the file a
    read shows, the same whether the host numbers every line (`     12→`, `12\t`, `12: `), a few
    (a thinned read) or none (Codex's `sed -n`)."""
    found = _PREFIXES.findall("\n" + text)
    return len(text) - (sum(map(len, found)) - len(found))  # each match holds its newline


def unnumbered_lines(text: str) -> list[str]:
    """The lines of `text`, each without its line-number prefix if it has one."""
    return [_NUMBERED.sub("", line) for line in text.split("\n")]


def shown_at(shown: list[str], text: str) -> int | None:
    """Where the lines `shown` (`unnumbered_lines` of a result) hold every line of `text`, in a
    row: the index of the first of them; None when they do not, or `text` is all blank."""
    lines = text.rstrip("\n").split("\n")
    if not any(line.strip() for line in lines):
        return None
    return next((i for i, line in enumerate(shown) if line == lines[0] and shown[i:i + len(lines)] == lines), None)


def thinning_key(text: str) -> str | None:
    """The CCR key of the whole read behind a thinned read's marker, if `text` is one."""
    if NUMBERS_THINNED not in text:
        return None
    return next((m.key for m in find_markers(text) if m.summary.startswith(NUMBERS_THINNED)), None)

