"""Does a later message show these lines again: the one test of the only-copy rule.

A block whose text the agent may still copy (a file read's result, a write's or edit's body) may be
cut by age only once a later message shows the same lines: a later read of the file, a whole
write of it, its deletion. Reads of part of a file (Claude Code `Read` with `offset`/`limit`, Codex
`sed -n '320,860p' f`, OpenCode `read` with `offset`, `head`, `tail`) show only what their
results hold, so ranges count: a read of lines 320-860 does not show lines 1-320.
`supersede_inputs` (bodies) and `trim_outputs.stale_reads` (reads) both ask `shown_again_at`.

What must hold: a block is shown again only when every file it holds lines of has a later
touch that shows it (`SHOWN_AGAIN`), and, once any of those touches is a read, the later reads and
whole writes together show at least `READS_SHOW` of the block's distinct lines (`copy_lines`);
a deletion counts as all of them. Touches are taken in request order, so the answer does not
depend on a set's order.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from compress.stagekit.line_numbers import unnumbered_lines
from compress.vocab.calls import written_texts
from compress.vocab.touches import CREATE, DELETE, READ, WRITE, FileTouch, same_file

SHOWN_AGAIN = frozenset({READ, WRITE, CREATE, DELETE})
"""Later touches after which a block is no longer the agent's only copy of its file's lines: a read
or a whole write shows the file again, a deletion leaves nothing to copy. A move does not: the
lines live on at the new path, where the agent may edit them."""
READS_SHOW = 0.9
"""The share of a block's distinct lines that the later reads (and whole writes) of its files must
show for a read to count as showing the file again: a read of a few lines elsewhere in the file
(an offset and limit, `sed -n`, `head`, `wc`) leaves the block the agent's only copy of the rest.
Set a priori (0.5 and 1.0 give the same corpus replay within 0.002), not chosen with the replay."""
MIN_LINE_CHARS = 4
"""Lines shorter than this once stripped (`}`, `end`, blank) are not counted: every file has them."""

Showing = tuple[int, FileTouch]
"""A later touch that shows a file again, with its position in the caller's timeline."""


def copy_lines(text: str, numbered: bool = False) -> frozenset[str]:
    """The distinct lines of `text` an agent could copy, stripped, of at least `MIN_LINE_CHARS`
    characters; `numbered` (a read's result): each without its line-number prefix
    (`compress.stagekit.line_numbers`). A body is never unnumbered: `8080: x` is its text."""
    lines = unnumbered_lines(text) if numbered else text.split("\n")
    return frozenset(stripped for line in lines if len(stripped := line.strip()) >= MIN_LINE_CHARS)


def written_lines(tool_name: str, tool_input: Any) -> frozenset[str]:
    """The distinct lines one call leaves in the files it writes (`compress.vocab.calls.written_texts`),
    counted as `copy_lines` counts them: what a body holds, or what a whole write shows again."""
    return frozenset().union(*map(copy_lines, written_texts(tool_name, tool_input)))


def later_touches(timeline: Sequence[Iterable[FileTouch]]) -> Callable[[int, str], list[Showing]]:
    """`later(pos, path)`: the touches of `path`'s file (`same_file`) by the calls after position
    `pos` of `timeline` (each call's touches, in request order), in order, with their positions."""
    by_name: dict[str, list[Showing]] = defaultdict(list)
    for pos, touches in enumerate(timeline):
        for touch in touches:
            by_name[posixpath.basename(touch.path)].append((pos, touch))

    def later(pos: int, path: str) -> list[Showing]:
        return [(p, t) for p, t in by_name[posixpath.basename(path)] if p > pos and same_file(path, t.path)]

    return later


def shown_again_at(wanted: frozenset[str], showing: Sequence[Sequence[Showing]],
                   lines_of: Callable[[int, FileTouch], frozenset[str]]) -> Showing | None:
    """The first later touch by which every file of a block has been shown again and, if any of the
    touches so far is a read, they show `READS_SHOW` of `wanted` (the block's `copy_lines`);
    None before then. `showing`: per file of the block, its later touches whose action is in
    `SHOWN_AGAIN` (a re-read the host answered with a pointer back to an earlier read left out:
    it shows nothing); `lines_of(pos, touch)`: the lines that touch puts in front of the agent
    (a read's result as earlier stages left it, a whole write's body)."""
    if not showing or not all(showing):
        return None
    every_file = max(touches[0][0] for touches in showing)
    seen: set[str] = set()
    read = False
    # in request order, and within one call in the order its touches name them (never a set's)
    for pos, touch in sorted(dict.fromkeys(pt for touches in showing for pt in touches), key=lambda pt: pt[0]):
        read = read or touch.action == READ
        seen |= wanted if touch.action == DELETE else lines_of(pos, touch)
        if pos >= every_file and (not read or len(wanted & seen) >= READS_SHOW * len(wanted)):
            return pos, touch
    return None
