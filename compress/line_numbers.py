"""Line-number prefixes of numbered file reads, and thinning them.

Hosts number every line of a file read (Claude Code `     12→`, `cat -n`, `nl` and the text
editor tool `    12\t`, OpenCode `12: `). A prefix costs about three tokens, a third of a short
line of code. Thinned, only the first line and every `every`-th line keep their numbers:
positions stay easy to find, and every line's content stays verbatim (the lines an agent copies
into edits are untouched). Only the unambiguous `→` and tab prefixes are thinned: `12: ` cannot
be told from SWE-agent's `12:` followed by an indented line, whose first space is code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUMBER_PREFIX = r"[ \t]{0,12}\d{1,9}(?:\t|→|:[ \t])"
"""A line-number prefix of a numbered file read (`  12→`, `12\t`, `12: `)."""
_THINNABLE = re.compile(r"[ \t]{0,12}(\d{1,9})(?:\t|→)")

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
    `min_lines` lines, of which `MIN_NUMBERED_SHARE` carry numbers counting up by one. Lines
    without a number (a host's notes around the file) are kept as they are."""
    lines = text.split("\n")
    if len(lines) < min_lines:
        return None
    out: list[str] = []
    first = expected = -1
    numbered = 0
    for line in lines:
        match = _THINNABLE.match(line)
        number = int(match.group(1)) if match else -1
        if match is None or (expected >= 0 and number != expected):
            out.append(line)
            continue
        numbered += 1
        if first < 0:
            first = number
        expected = number + 1
        out.append(line if number == first or number % every == 0 else line[match.end():])
    if numbered < MIN_NUMBERED_SHARE * len(lines):
        return None
    return Thinned("\n".join(out), first, expected - 1, every)
