"""The rules every stage's output must keep, checked by the runner after each stage.

A stage keeps the number of messages; it changes only mutable messages (not frozen by the
session, not in the protected tail), and in them never a tool id or name, user-written text,
a system message (host instructions and hook output: Claude Code 2.1 sends them inside
`messages`), or (unless `may_edit_inputs`) a tool input. A stage that `appends_to_newest` may
also append exactly one text block to the newest user message (`newest_user_index`: system
messages may follow it). A stage that `decides_on_arrival` may change only tool results and,
if it `may_edit_inputs`, tool inputs.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

from compress.model import TEXT, TOOL_RESULT, TOOL_USE, Message, newest_user_index
from compress.stagekit.stage import Stage


def violation(before: list[Message], after: Any, mutable: tuple[bool, ...], stage: Stage) -> str:
    """Why a stage's output breaks a rule, or '' if it keeps them all."""
    if not isinstance(after, list) or len(after) != len(before):
        return "changed the number of messages"
    newest = newest_user_index(before) if stage.appends_to_newest else -1
    for i in itertools.compress(itertools.count(), map(operator.is_not, before, after)):  # the changed ones
        a, b = before[i], after[i]
        if i == newest:
            if _appends_one_text_block(a, b):
                continue
            return f"changed the newest message {i} other than by appending one text block"
        if not mutable[i]:
            return f"changed frozen or protected message {i}"
        if not isinstance(b, Message) or b.role != a.role or b.raw is not a.raw:
            return f"replaced message {i}"
        if a.role == "system":
            return f"changed system message {i}"
        if _calls(a) != _calls(b):
            return f"changed tool ids or names in message {i}"
        if a.role == "user" and not _same_objects(_authored(a), _authored(b)):
            return f"changed user text in message {i}"
        if stage.decides_on_arrival and not _same_objects(_authored(a, stage), _authored(b, stage)):
            return f"changed more than tool results{' and inputs' if stage.may_edit_inputs else ''} in message {i}"
        if not stage.may_edit_inputs and not _same_objects(_inputs(a), _inputs(b)):
            return f"changed tool inputs in message {i}"
    return ""


def _appends_one_text_block(before: Message, after: Any) -> bool:
    """`after` is the user message `before` with one text block appended, all else the same objects."""
    return (isinstance(after, Message) and before.role == after.role == "user" and after.raw is before.raw
            and len(after.blocks) == len(before.blocks) + 1 and after.blocks[-1].kind == TEXT
            and _same_objects(list(before.blocks), list(after.blocks[:-1])))


def _calls(msg: Message) -> list[tuple[str, str, str]]:
    return [(b.kind, b.tool_id, b.tool_name) for b in msg.blocks if b.kind in (TOOL_USE, TOOL_RESULT)]


def _authored(msg: Message, stage: Stage | None = None) -> list[Any]:
    """Blocks other than tool results; without the tool calls for a stage that may edit inputs
    (its calls' ids and names are checked apart)."""
    skip = (TOOL_RESULT, TOOL_USE) if stage is not None and stage.may_edit_inputs else (TOOL_RESULT,)
    return [b for b in msg.blocks if b.kind not in skip]


def _inputs(msg: Message) -> list[Any]:
    return [b.input for b in msg.blocks if b.kind == TOOL_USE]


def _same_objects(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
