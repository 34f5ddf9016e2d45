"""The last checkpoint, summarized for session start. Light on purpose: hooks import it per process."""

from __future__ import annotations

import re
from pathlib import Path

CHECKPOINT_FILE = "checkpoint.md"
_SECTION_START = re.compile(r"(?m)^(?=## )")


def latest_summary(home: Path, max_chars: int = 1500) -> str | None:
    """The Task, Next steps and Critical context of the last checkpoint, for session start."""
    path = home / CHECKPOINT_FILE
    if not path.exists():
        return None
    text = path.read_text("utf-8", errors="replace")
    keep = []
    for part in _SECTION_START.split(text):
        if part.startswith(("## Task", "## Next steps", "## Critical context", "# Checkpoint")):
            keep.append(part.strip())
    summary = "\n\n".join(keep)
    return summary if len(summary) <= max_chars else summary[:max_chars].rstrip() + "…"
