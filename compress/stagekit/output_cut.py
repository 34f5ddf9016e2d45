"""How a long tool output is cut, shared by the stages that cut outputs (trim_outputs when an
output has left the protected tail, decide_on_arrival when it arrives).

`TrimOptions` holds the line budgets per tool kind; `trimmed(...)` cuts base64 runs and keeps the
lines `compress.stagekit.kept_lines` selects for the kind, memoized (it is pure). The same arguments give
the same bytes on every run, which is what lets an arrival decision be re-made at an epoch
without changing the request.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ccr.markers import blob_cut, format_marker
from compress.stagekit.kept_lines import (
    Budget,
    Selection,
    cut_long_line,
    group_file_list,
    render,
    select_command,
    select_file_read,
    select_prose,
    select_search,
)
from compress.stagekit.memo import MEMO_BYTES, MEMO_VALUE_BYTES, TextMemo
from compress.tiers import Tier
from compress.vocab.tools import ToolKind

COLD_SINCE = ("read", "last_change")


@dataclass(frozen=True)
class TrimOptions:
    min_chars: int = 3_000
    head_lines: int = 40
    key_lines: int = 30
    tail_lines: int = 20
    command_head_lines: int = 15
    command_tail_lines: int = 40
    context_lines: int = 2
    max_line_chars: int = 400
    search_files: int = 20
    search_matches: int = 5
    list_dirs: int = 30
    list_names: int = 5
    base64_min_chars: int = 1_000
    old_after_turns: int = 0
    tier_scale: Mapping[str, float] = None  # type: ignore[assignment]
    stale_scale: float = 0.4
    non_source_scale: float = 0.2
    """On top of the tier's scale for reads of files that are not source code
    (`compress.vocab.files.is_source`): docs, data and logs are rarely copied into edits."""
    cold_after_turns: int = 30
    cold_scale: float = 0.2
    """On top, for a cold read: at least `cold_after_turns` assistant turns old, and no call
    changed its file within that many turns after it (`trim_outputs.cold_reads`; 0 turns: off).
    Agents often read a file while exploring and edit it much later, copying old texts out of
    that read: 30 turns, chosen with the corpus replay and judged leave-one-project-out
    (docs/replay-results.md; 9 turns had lost most of the needed lines from sources 11+
    messages old)."""
    cold_since: str = "last_change"
    """What `cold_after_turns` counts from: "last_change", the newest read or change of its file
    (cold once the file has been left alone that long, `trim_outputs.idle_reads`), or "read", the
    read itself (cold when no call changed its file within that many turns after it, and warm
    for good otherwise, `trim_outputs.cold_reads`). Chosen with the corpus replay and judged
    leave-one-project-out (docs/replay-results.md)."""
    cold_ref_chars: int = 6_000
    """A read of more than this many characters of a file (without line-number prefixes, which
    differ by client) goes cold in proportionally fewer turns (`cold_after_turns` ×
    `cold_ref_chars` / its length, at least 3; 0: every read waits as long;
    `trim_outputs.cold_turns`; see `cold_ref_changed`): an edit copies a few lines of a big file,
    and keeping all of it costs in proportion to its length. Chosen with the corpus replay,
    judged leave-one-project-out (docs/replay-results.md)."""
    cold_ref_changed: bool = True
    """Whether `cold_ref_chars` also shortens the wait of a read whose file some call had changed
    before it (`trim_outputs.worked_reads`). True: every long read goes cold sooner. False: a file
    the agent works on keeps its newest read the full `cold_after_turns`, however long; only long
    reads of files it has not changed yet (exploring) go cold sooner. Chosen with the corpus
    replay, judged leave-one-project-out (docs/replay-results.md)."""
    cold_after_commit: bool = True
    """A file read made before a successful `git commit` is cold (`trim_outputs.committed_reads`):
    the work it served is done. Chosen with the corpus replay, judged leave-one-project-out
    (docs/replay-results.md)."""
    report_fresh_turns: int = 12
    """A subagent's report (`compress.vocab.tools.is_subagent`) stays whole until it is this many
    assistant turns older than the epoch's anchor, and only while the agent has not moved on to
    files (`trim_outputs.moved_on`), then is cut like other output (head, headings, error lines,
    tail; the whole report in CCR): the agent acts on a report in the turns after it and copies
    no edits out of it. Chosen with the corpus replay, judged leave-one-project-out
    (docs/replay-results.md)."""
    keep_fresh_reads: bool = True
    fresh_max_line_chars: int = 2_000
    """A read of source code that is neither stale nor cold stays whole (line numbers thinned on
    arrival): it is the agent's copy of a file it may be working on, and the texts its edits
    replace are copied out of it; unless a line is longer than `fresh_max_line_chars`
    (minified code is not copied line by line). Off: every read is cut like other output, at
    any tier (`unshown_tier` too)."""
    unshown_tier: str = "high"
    """The lowest tier at which a file read that no later message shows again (not stale:
    `trim_outputs.stale_reads`) may be cut, however old, cold or far from source code it is.
    "high" (the host compacts soon) keeps it, the agent's only copy of those lines, whole
    until then; "always" cuts cold and non-source reads by age at any tier (cheaper, but it
    hides lines agents later copy into edits; docs/replay-results.md). A line longer than
    `fresh_max_line_chars` makes a read ordinary output at any tier."""

    def __post_init__(self) -> None:
        Tier.parse(self.unshown_tier)
        if self.cold_since not in COLD_SINCE:
            raise ValueError(f"trim_outputs.cold_since must be one of {', '.join(COLD_SINCE)}, got {self.cold_since!r}")
        if self.tier_scale is None:
            object.__setattr__(self, "tier_scale", {"always": 3.0, "medium": 2.0, "high": 1.6})

    def scale(self, tier: Tier, age: int, stale: bool, source: bool = True, cold: bool = False) -> float:
        scale = self.tier_scale.get(tier.label, 1.0) if age >= self.old_after_turns else 1.0
        scale *= self.cold_scale if cold else 1.0
        return scale * (self.stale_scale if stale else 1.0) * (1.0 if source else self.non_source_scale)

    def budget(self, scale: float, kind: ToolKind) -> Budget:
        def lines(n: int, floor: int = 3) -> int:
            return max(floor, math.ceil(n * scale))

        command = kind is ToolKind.COMMAND
        return Budget(
            head=lines(self.command_head_lines if command else self.head_lines),
            key=lines(self.key_lines, 0),
            tail=lines(self.command_tail_lines if command else self.tail_lines),
            context=self.context_lines,
            max_line_chars=max(200, math.ceil(self.max_line_chars * min(1.0, scale * 2))),
            search_files=lines(self.search_files, 5),
            search_matches=lines(self.search_matches, 2),
            list_dirs=lines(self.list_dirs, 5),
            list_names=lines(self.list_names, 2),
        )


# -- images and base64 ----------------------------------------------------------------

_MAGIC = (("iVBORw0KGgo", "image/png"), ("/9j/", "image/jpeg"), ("R0lGOD", "image/gif"),
          ("UklGR", "image/webp"), ("JVBERi", "application/pdf"), ("UEsDB", "application/zip"))


def kb(chars: int) -> str:
    return f"{chars / 1024:,.0f} KB" if chars >= 1024 else f"{chars:,} chars"


def media_type(data: str, declared: str = "") -> str:
    if declared:
        return declared
    for prefix, kind in _MAGIC:
        if data.startswith(prefix):
            return kind
    return "binary"


@functools.lru_cache(maxsize=8)
def base64_pattern(min_chars: int) -> re.Pattern:
    # starts only where a run starts (lookbehind), possessive: each character is scanned once
    return re.compile(r"(?:data:(?P<mt>[\w.+-]{1,60}/[\w.+-]{1,60});base64,)?(?<![A-Za-z0-9+/])"
                         r"(?P<run>[A-Za-z0-9+/]{%d,}+={0,2})" % min_chars)


_BASE64_CLASSES = bytes(ord("b") if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "+/") else ord(" ")
                        for c in range(256))


def has_base64_run(text: str, min_chars: int) -> bool:
    """Whether `text` holds `min_chars` base64 characters in a row: the precondition of any
    `base64_pattern` match, checked by C-level byte scans (UTF-8 bytes of non-ASCII characters
    are never base64 characters, so byte runs are character runs)."""
    if len(text) < min_chars:
        return False
    return b"b" * min_chars in text.encode("utf-8", "surrogatepass").translate(_BASE64_CLASSES)


def cut_base64(text: str, min_chars: int) -> tuple[str, int]:
    """Text with long base64 runs (mixed case and digits) replaced by inline notes."""
    if not has_base64_run(text, min_chars):
        return text, 0
    pattern = base64_pattern(min_chars)
    count = 0

    def note(m: re.Match) -> str:
        nonlocal count
        run = m.group("run")
        if run.isdigit() or run.islower() or run.isupper() or not any(c.isdigit() for c in run[:4096]):
            return m.group()
        count += 1
        return blob_cut(media_type(run, m.group("mt") or ""), kb(len(run)))

    out = pattern.sub(note, text)
    return out, count


# -- cutting by kind ---------------------------------------------------------------------

def trim_text(text: str, kind: ToolKind, budget: Budget, key: str, path: str, base64_min: int,
              cut_lines: bool = True) -> str | None:
    """The trimmed text (markers carry `key`), or None when there is nothing to cut. With
    `cut_lines` off only base64 runs are cut."""
    text, blobs = cut_base64(text, base64_min)
    lines = text.split("\n")
    if not cut_lines:
        return f"{text}\n{format_marker(f'{blobs} base64 blob(s) cut', key)}" if blobs else None
    grouped = group_file_list(lines, budget) if kind is ToolKind.FILE_LIST else None
    if grouped is not None:
        body, summary = grouped
        return format_marker(summary, key) + "\n" + "\n".join(cut_long_line(x, budget.max_line_chars) for x in body)
    sel = _select(lines, kind, budget, text, path)
    if blobs:
        sel.summary += f"; {blobs} base64 blob{'s' if blobs > 1 else ''} cut"
    if len(sel.keep) == len(lines) and not blobs and all(len(x) <= budget.max_line_chars for x in lines):
        return None
    return render(lines, sel, key, budget.max_line_chars)


def _select(lines: list[str], kind: ToolKind, budget: Budget, text: str, path: str) -> Selection:
    if kind is ToolKind.FILE_READ:
        return select_file_read(lines, budget, path)
    if kind is ToolKind.SEARCH:
        grouped = select_search(lines, budget)
        if grouped is not None:
            return grouped
    if kind in (ToolKind.COMMAND, ToolKind.SEARCH, ToolKind.FILE_LIST):
        return select_command(lines, budget, text)
    return select_prose(lines, budget, text)


TRIMMED = TextMemo(max_bytes=MEMO_BYTES, max_value_bytes=MEMO_VALUE_BYTES)
"""`trim_text` results (it is pure), by all its arguments but the text, whose CCR key is one of them."""


def trimmed(text: str, kind: ToolKind, budget: Budget, key: str, *rest: Any) -> str | None:
    """`trim_text(text, kind, budget, key, *rest)` where `key` is the CCR key of `text`, remembered."""
    args = (kind, budget, key, *rest)
    return TRIMMED.get_or_compute(args, lambda: trim_text(text, *args))
