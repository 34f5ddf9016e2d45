"""The provider's own context management in a request: what the provider drops or clears anyway.

Two providers edit a request's context themselves before the model reads it:
- Anthropic server-side compaction (`context_management.edits` with `compact_20260112`): the
  response carries a `compaction` content block (the summary); the client sends it back and the
  API drops every message block before the last one.
- OpenAI Responses compaction: a `{"type": "compaction", "encrypted_content": ...}` input item
  (from `/responses/compact` or from `context_management` with `compact_threshold`) carries the
  earlier context; the items before the last one are, at most, ones the client may drop.
- Anthropic context editing, `clear_tool_uses_20250919`: once the input reaches its `trigger`
  (`input_tokens`, default 100,000, or `tool_uses`), the API replaces the oldest tool results
  (and their inputs with `clear_tool_inputs`) with a placeholder, keeping the newest `keep`
  tool uses (default 3) and never those of `exclude_tools`; when it could not clear
  `clear_at_least` input tokens it clears nothing.

`managed_floor` turns this into one index: the first message ctxmill may change. Everything
before it renders exactly as the client sent it (or as ctxmill already sent it), so no CCR
write and no cache rewrite is spent on content the provider drops anyway, and no stage points
the model at text it will not see. Must hold: the floor depends only on the body and the token
counts given (deterministic); the compaction block or item itself, signatures and order are
never changed (they parse as opaque blocks no stage edits); unknown or malformed settings
never raise and never predict a clear (the floor then only follows compaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compress.model import OTHER, TOOL_RESULT, TOOL_USE, Message

COMPACTION = "compaction"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
DEFAULT_TRIGGER_TOKENS = 100_000
DEFAULT_KEEP_TOOL_USES = 3


@dataclass(frozen=True)
class Managed:
    """The first message ctxmill may change (`floor`), and why, in one line ('' when 0);
    `dropped`: the leading messages the provider drops whole (those before the last compaction;
    the compaction itself is read)."""

    floor: int = 0
    reason: str = ""
    dropped: int = 0


def managed_floor(body: Any, messages: Sequence[Message], tokens: Sequence[int], head_tokens: int = 0) -> Managed:
    """The floor for a request whose canonical `messages` were read from `body`; `tokens` are
    the messages' tokens as they would be sent (the provider's trigger counts those, plus
    `head_tokens` for system prompt and tools)."""
    compacted = last_compaction(messages) + 1
    reasons = [f"provider compaction at message {compacted - 1}"] if compacted else []
    cleared = cleared_tool_uses(body, messages, tokens, head_tokens, compacted)
    floor = compacted
    if cleared:
        floor = max(floor, max(cleared) + 1)
        reasons.append(f"provider clears tool results up to message {max(cleared)}")
    return Managed(floor, "; ".join(reasons), max(compacted - 1, 0))


def last_compaction(messages: Sequence[Message]) -> int:
    """Index of the last message that is (an OpenAI Responses item, read as role "other") or
    holds (an Anthropic assistant message, as an opaque block) a compaction, -1 if none."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.role == "other":
            if _is_compaction(msg.raw):
                return i
        elif msg.role == "assistant":
            for block in msg.blocks:
                if block.kind == OTHER and _is_compaction(block.raw):
                    return i
    return -1


def _is_compaction(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("type") == COMPACTION


def _edits(body: Any, kind: str) -> list[dict]:
    management = body.get("context_management") if isinstance(body, dict) else None
    edits = management.get("edits") if isinstance(management, dict) else None
    return [e for e in edits if isinstance(e, dict) and e.get("type") == kind] if isinstance(edits, list) else []


def _amount(setting: Any, unit: str, default: int | None) -> int | None:
    """The value of a `{"type": unit, "value": n}` setting; `default` when absent; None when
    malformed or of another unit (the edit is then not predicted)."""
    if setting is None:
        return default
    if not isinstance(setting, dict) or setting.get("type") != unit:
        return None
    value = setting.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def cleared_tool_uses(body: Any, messages: Sequence[Message], tokens: Sequence[int], head_tokens: int = 0,
                      start: int = 0) -> list[int]:
    """Indexes of the messages holding a tool result (or, with `clear_tool_inputs`, a tool use)
    that a `clear_tool_uses_20250919` edit of `body` clears, among messages from `start` on.
    Empty when the request has no such edit or it would not fire."""
    edits = _edits(body, CLEAR_TOOL_USES)
    if len(edits) != 1:
        return []  # none, or several whose combined effect is not documented: predict nothing
    edit = edits[0]
    uses = [(i, b) for i in range(start, len(messages)) for b in messages[i].blocks if b.kind == TOOL_USE]
    trigger = edit.get("trigger")
    unit = trigger.get("type") if isinstance(trigger, dict) else "input_tokens"
    if unit == "tool_uses":
        limit, reached = _amount(trigger, "tool_uses", None), len(uses)
    else:
        limit, reached = _amount(trigger, "input_tokens", DEFAULT_TRIGGER_TOKENS), head_tokens + sum(tokens[start:])
    keep = _amount(edit.get("keep"), "tool_uses", DEFAULT_KEEP_TOOL_USES)
    excluded = edit.get("exclude_tools", [])
    if limit is None or keep is None or reached < limit or not isinstance(excluded, list):
        return []
    candidates = [(i, b) for i, b in uses if b.tool_name not in excluded]
    cleared_ids = {b.tool_id for _, b in candidates[:max(0, len(candidates) - keep)]}
    if not cleared_ids:
        return []
    inputs = edit.get("clear_tool_inputs", False)  # true, or the names of the tools whose inputs go too

    def cleared(b) -> bool:
        return b.tool_id in cleared_ids and (b.kind == TOOL_RESULT or b.kind == TOOL_USE and (
            inputs is True or isinstance(inputs, list) and b.tool_name in inputs))

    held = sorted({i for i in range(start, len(messages)) for b in messages[i].blocks if cleared(b)})
    # what it clears, counted as the whole messages that hold it (an upper bound)
    at_least = _amount(edit.get("clear_at_least"), "input_tokens", 0)
    if at_least is None or sum(tokens[i] for i in held) < at_least:
        return []
    return held
