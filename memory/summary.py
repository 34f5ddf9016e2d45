"""The last checkpoint, summarized for session start. Light on purpose: hooks import it per process.

What must hold: the summary is at most `max_chars` long and holds the checkpoint's title and its
Task, Next steps and Critical context sections, each with its heading and as much of its body as
its share of the budget allows. The budget is shared out so a long section never crowds out a short
one: a section that fits in an even share is kept whole and what it leaves goes to the others; a
longer one is cut at a line end where it can be (else mid-line), and "…" says so. So however long
the task, Next steps and Critical context keep at least a third of the budget each.
"""

from __future__ import annotations

import re
from pathlib import Path

CHECKPOINT_FILE = "checkpoint.md"
SUMMARY_SECTIONS = ("## Task", "## Next steps", "## Critical context")
"""Kept in the summary, in checkpoint order."""
_SECTION_START = re.compile(r"(?m)^(?=## )")
_MORE = "…"


def latest_summary(home: Path, max_chars: int = 1500) -> str | None:
    """The Task, Next steps and Critical context of the last checkpoint, for session start."""
    text = checkpoint_text(home)
    return None if text is None else summarize(text, max_chars)


def checkpoint_text(home: Path) -> str | None:
    """The project's last checkpoint (`<home>/checkpoint.md`), None when there is none or it is
    refused (`ground.home_files`: a link out of the home, a device, over CHECKPOINT_BYTES)."""
    from ground.home_files import CHECKPOINT_BYTES, read_home_file_or_skip

    data = read_home_file_or_skip(home, CHECKPOINT_FILE, CHECKPOINT_BYTES)
    return None if data is None else data.decode("utf-8", errors="replace")


def summarize(text: str, max_chars: int = 1500) -> str:
    """The summary of a checkpoint's text (see the module docstring)."""
    parts = _SECTION_START.split(text)
    title = next((p.strip().splitlines()[0] for p in parts if p.startswith("# Checkpoint")), "")
    kept = [p.strip() for p in parts if p.startswith(SUMMARY_SECTIONS)]
    joints = 2 * len(kept) if title else 2 * max(len(kept) - 1, 0)  # the blank lines between parts
    budget = max(max_chars - len(title) - joints, 0)
    shares = _share(kept, budget)
    out = [title] if title else []
    out += [_cut(part, shares[part]) for part in kept]
    return "\n\n".join(out)[:max_chars]


def _share(parts: list[str], budget: int) -> dict[str, int]:
    """part -> its characters: shortest first, each takes at most an even share of what is left,
    so short parts keep all and long ones split the rest evenly."""
    shares, left = {}, budget
    by_need = sorted(parts, key=len)
    for n, part in enumerate(by_need):
        shares[part] = min(len(part), left // (len(by_need) - n))
        left -= shares[part]
    return shares


def _cut(part: str, chars: int) -> str:
    """`part` in at most `chars` characters: its heading, then whole lines while they fit, then "…"."""
    if len(part) <= chars:
        return part
    room = max(chars - len(_MORE), 0)
    head = part[:room]
    line_end = head.rfind("\n")
    heading_end = part.find("\n")
    if line_end > heading_end >= 0:  # at least one body line fits whole
        head = head[:line_end]
    return head.rstrip() + _MORE
