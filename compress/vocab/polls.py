"""Polls of a running command: which call a poll's output belongs to.

Codex's unified exec starts a command with `exec_command`; when it runs longer than the call
waits, the result says `Process running with session ID 7` and the agent reads the rest of its
output with `write_stdin` calls naming that session (`POLL_TOOLS`). Such a poll answers with the
polled command's output, so it is of that command's kind: a `sed -n` read whose lines come back
through a poll is a file read, and cut like one (never on arrival, only once stale or cold).
Only the history tells which command a poll polls: `polled_calls` reads it (the earlier result
that named the session), and decide_on_arrival and trim_outputs classify a poll as that command;
a poll of a session no earlier result names stays a poll.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import regex

from compress.model import TOOL_RESULT, TOOL_USE, Block, Message
from compress.prefix_scans import PrefixScans

POLL_TOOLS = frozenset({"write_stdin"})
"""Tools whose output continues that of the command a session id names (Codex unified exec)."""

_SESSION = regex.compile(r"(?:session ID|session_id[=:])\s*(\d+)", regex.IGNORECASE)


def is_poll(name: str) -> bool:
    return name.lower().rsplit("__", 1)[-1] in POLL_TOOLS


def polled_calls(messages: list[Message], scans: PrefixScans | None = None, unchanged: int = 0) -> dict[str, tuple[str, Any]]:
    """Tool id of each poll -> (name, input) of the call that started the session it polls (its
    result named the session id first); polls of a session no earlier result names are left out.
    `scans`: checkpoints (`compress.prefix_scans`) of where earlier lists had no poll, to look
    only past, and to leave one in after the first `unchanged` messages; the same result without."""
    key = "polls.no_poll_before"
    start = (scans.resume(key, messages) or 0) if scans is not None else 0
    if not any(b.kind == TOOL_USE and is_poll(b.tool_name) for m in messages[start:] for b in m.blocks):
        if scans is not None and start < unchanged <= len(messages):
            scans.store(key, messages[:unchanged], unchanged)
        return {}
    calls: dict[str, tuple[str, Any]] = {}
    sessions: dict[str, tuple[str, Any]] = {}
    out: dict[str, tuple[str, Any]] = {}
    for msg in messages:
        for block in msg.blocks:
            if block.kind == TOOL_USE:
                calls[block.tool_id] = (block.tool_name, block.input)
                if is_poll(block.tool_name) and isinstance(block.input, dict):
                    started = sessions.get(str(block.input.get("session_id", "")))
                    if started is not None:
                        out[block.tool_id] = started
            elif (block.kind == TOOL_RESULT and block.tool_id in calls and not is_poll(block.tool_name)
                  and "session" in (text := block.result_text[:2_000]) and (found := _SESSION.search(text))):
                sessions.setdefault(found.group(1), calls[block.tool_id])
    return out


def resolved(messages: list[Message], polls: dict[str, tuple[str, Any]]) -> list[Message]:
    """`messages` with each poll's call shown as the call it polls (same id): for the rules that
    classify calls by name and input (stale and cold reads). Never rendered."""
    if not polls:
        return messages

    def one(block: Block) -> Block:
        if block.tool_id in polls and block.kind in (TOOL_USE, TOOL_RESULT):
            name, polled = polls[block.tool_id]
            return replace(block, tool_name=name, input=polled) if block.kind == TOOL_USE \
                else replace(block, tool_name=name, call_input=polled)
        return block

    return [msg.with_blocks([one(b) for b in msg.blocks]) if any(b.tool_id in polls for b in msg.blocks) else msg
            for msg in messages]
