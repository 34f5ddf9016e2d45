"""reread_pointers: a host's pointer back to a read this request shows cut carries that read again.

Claude Code (2.1.90 on) answers a Read of a file it tracks as unchanged since the agent's last
Read of it with a pointer to that earlier read, not the file (`compress.vocab.signals.rereads`).
When ctxmill has cut the earlier read (gone cold, stale), the pointer leads the agent to a
marker: it asked to see the file and is shown neither. So the pointer's result keeps the host's
words and gets the earlier read's text, as the client sent it, after a note: `[ctxmill: the
earlier read this points to is shortened in this request; its text follows]`. The result then
is a read of the file like any other: its line numbers thinned (`decide_on_arrival`, which runs
next), the newest read of the file, kept whole until it goes cold (`trim_outputs`).

The earlier read is the newest read of the same file before the pointer that is no pointer
itself. It is shown cut when the session renders it, a message this run does not decide, with a
cut marker (`StageContext.shown_cut`). A run that decides the earlier read too (an epoch from
before it) leaves the pointer as the host wrote it: the pointer renews that read, which then
stays whole (`trim_outputs`).

What must hold: ids, names and the host's words stay; only a pointer whose earlier read is shown
cut grows; nothing is cut, so nothing goes to CCR; the same messages and session give the same
bytes. It decides on arrival: the pointer is in the protected tail when the agent needs it.
"""

from __future__ import annotations

from functools import partial

from compress.model import TOOL_RESULT, Block, Message
from compress.stagekit.stage import BlockEdit, Stage, StageContext, edit_blocks
from compress.tiers import Tier
from compress.vocab.calls import first_path
from compress.vocab.signals.rereads import pointer_reads, points_to_earlier_read
from compress.vocab.tools import ToolKind, tool_kind
from compress.vocab.touches import same_file

NOTE = "[ctxmill: the earlier read this points to is shortened in this request; its text follows]"


def _with_earlier_read(block: Block, text: str) -> Block:
    """The pointer's result with the earlier read's `text` after the note."""
    return block.with_result_text(f"{block.result_text}\n{NOTE}\n{text}")


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    if not any(ctx.mutable[i] and pointer_reads([msg]) for i, msg in enumerate(messages)):
        return messages
    reads: list[tuple[str, int, int]] = []  # (path, message, block) of every read that is no pointer
    edits: dict[int, dict[int, BlockEdit]] = {}
    for i, msg in enumerate(messages):
        for j, block in enumerate(msg.blocks):
            if block.kind != TOOL_RESULT or tool_kind(block.tool_name, block.call_input) is not ToolKind.FILE_READ:
                continue
            path = first_path(block.tool_name, block.call_input)
            if not points_to_earlier_read(block.result_text):
                reads.append((path, i, j))
                continue
            earlier = next(((m, b) for p, m, b in reversed(reads) if path and same_file(p, path)), None)
            if ctx.mutable[i] and earlier and not ctx.mutable[earlier[0]] and ctx.shown_cut(earlier[0]):
                text = messages[earlier[0]].blocks[earlier[1]].result_text
                edits.setdefault(i, {})[j] = partial(_with_earlier_read, text=text)
    return edit_blocks(messages, ctx, edits, "pointer carries the earlier read it points to")


STAGE = Stage("reread_pointers", run, Tier.ALWAYS, decides_on_arrival=True)
