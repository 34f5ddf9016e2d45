"""A host's answer to a re-read of a file it knows is unchanged: a pointer back, not the file.

Claude Code (since 2.1.90) answers a Read of a file it tracks as unchanged since the agent's
last Read of it with "File unchanged since last read. The content from the earlier Read
tool_result in this conversation is still current — refer to that instead of re-reading."
(2.1.332 also: "Wasted call — file unchanged since your last Read. Refer to that earlier
tool_result instead."). Such a read shows no line of the file: the earlier read stays the
agent's only copy, and the re-read says the agent is using it now. Two stages read it that way
(`trim_outputs`: the earlier read is neither stale nor left alone; `supersede_inputs`: a write's
body is not shown again).
"""

from __future__ import annotations

import re

from compress.model import TOOL_RESULT, Message

_POINTER = re.compile(r"\s*(?:wasted call\W{1,4})?file unchanged since (?:your )?last read\b", re.IGNORECASE)
MAX_POINTER_CHARS = 400
"""Longer results hold more than the pointer (a real read that starts with those words)."""


def points_to_earlier_read(text: str) -> bool:
    """Whether a read's result is the host's pointer to the agent's earlier read of the file."""
    return len(text) <= MAX_POINTER_CHARS and _POINTER.match(text) is not None


def pointer_reads(messages: list[Message]) -> set[str]:
    """Tool ids of the calls whose result is such a pointer (`points_to_earlier_read`)."""
    return {b.tool_id for m in messages for b in m.blocks
            if b.kind == TOOL_RESULT and points_to_earlier_read(b.result_text)}
