"""OpenCode's live messages (what its `experimental.chat.messages.transform` hook holds) as an
Anthropic Messages body, and the edits that carry a compressed body back onto OpenCode's parts.

OpenCode keeps one message per person prompt and one per model step: `{info: {id, role, …},
parts: [...]}`, where a `tool` part holds both the call (`state.input`) and its result
(`state.output`, or `state.error` when it failed). Before each model request OpenCode turns them
into provider messages (assistant text, reasoning and tool calls, then the tool results in a
user/tool message). `to_body` does the same into an Anthropic body, so the stages see exactly the
structure the model sees and the Anthropic shape's lossless round trip applies; each content
block remembers the part it came from (`Origin`). `edits(origins, before, after)` compares the
sent body with the compressed one and says how to change the parts:

- `{"op": "text", "m": i, "p": j, "text": s}`: part j of message i gets this text;
- `{"op": "output" | "error", "m", "p", "value": s}`: a tool part's `state.output` / `state.error`;
- `{"op": "input", "m", "p", "value": obj}`: a tool part's `state.input` (superseded bodies);
- `{"op": "drop", "m", "p"}`: remove the part (old reasoning);
- `{"op": "note", "m": i, "text": s}`: insert a user message holding this text after message i
  (a nudge: on the wire it joins the tool results after message i, as with Claude Code).

Messages are the plugin's projection (see the plugin's `project`): `{id, role, parts}` with parts
`{type: "text", text, synthetic?, ignored?}`, `{type: "reasoning", text}`, `{type: "tool",
callID, tool, status, input, output | error}` and `{type}` for any other part. Must hold: a body
that comes back unchanged gives no edits; every tool call keeps exactly one result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NOTE = "note"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a content block of the body came from: part `part` of OpenCode message `message`,
    as its `field` (text, output, error, input, reasoning)."""

    message: int
    part: int
    field: str


def _text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def to_body(messages: list[Any], model: str = "") -> tuple[dict, list[tuple[int, list[Origin | None]]]]:
    """The Anthropic body and, per body message, (the OpenCode message it belongs to, each
    block's Origin or None for blocks made up to keep the conversation well formed)."""
    out: list[dict] = []
    origins: list[tuple[int, list[Origin | None]]] = []
    for i, msg in enumerate(messages):
        parts = msg.get("parts") if isinstance(msg, dict) else None
        parts = parts if isinstance(parts, list) else []
        role = msg.get("role") if isinstance(msg, dict) else None
        if role == "assistant":
            blocks, where, results, result_where = [], [], [], []
            for j, part in enumerate(parts):
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "reasoning" and isinstance(part.get("text"), str) and part["text"]:
                    blocks.append({"type": "thinking", "thinking": part["text"], "signature": ""})
                    where.append(Origin(i, j, "reasoning"))
                elif kind == "text" and isinstance(part.get("text"), str) and part["text"]:
                    blocks.append(_text_block(part["text"]))
                    where.append(Origin(i, j, "text"))
                elif kind == "tool" and isinstance(part.get("callID"), str):
                    blocks.append({"type": "tool_use", "id": part["callID"], "name": str(part.get("tool", "")),
                                   "input": part.get("input") if part.get("input") is not None else {}})
                    where.append(Origin(i, j, "input"))
                    field = "error" if part.get("status") == "error" else "output"
                    value = part.get(field)
                    result = {"type": "tool_result", "tool_use_id": part["callID"],
                              "content": value if isinstance(value, str) else ""}
                    if field == "error":
                        result["is_error"] = True
                    results.append(result)
                    result_where.append(Origin(i, j, field) if isinstance(value, str) else None)
            out.append({"role": "assistant", "content": blocks or [_text_block("")]})
            origins.append((i, [*where] if where else [None]))
            if results:
                out.append({"role": "user", "content": results})
                origins.append((i, result_where))
        else:
            blocks, where = [], []
            for j, part in enumerate(parts):
                if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str) \
                        and not part.get("ignored"):
                    blocks.append(_text_block(part["text"]))
                    where.append(Origin(i, j, "text"))
            out.append({"role": "user", "content": blocks or [_text_block("")]})
            origins.append((i, [*where] if where else [None]))
    return {"model": model, "messages": out}, origins


def _result_value(block: dict) -> Any:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content


def edits(origins: list[tuple[int, list[Origin | None]]], before: dict, after: dict) -> list[dict]:
    """The part edits that turn what `to_body` made (`before`) into the compressed `after`."""
    ops: list[dict] = []
    for (owner, where), old, new in zip(origins, before["messages"], after["messages"]):
        if old is new or old == new:
            continue
        old_blocks, new_blocks = old["content"], new["content"]
        kept_thinking = any(b.get("type") == "thinking" for b in new_blocks)
        plain_old = [(b, o) for b, o in zip(old_blocks, where) if b.get("type") != "thinking"]
        plain_new = [b for b in new_blocks if b.get("type") != "thinking"]
        for b, o in zip(old_blocks, where):
            if b.get("type") == "thinking" and not kept_thinking and o is not None:
                ops.append({"op": "drop", "m": o.message, "p": o.part})
        for (b, o), nb in zip(plain_old, plain_new):
            if o is None or nb == b:
                continue
            if o.field == "text":
                ops.append({"op": "text", "m": o.message, "p": o.part, "text": nb.get("text", "")})
            elif o.field == "input":
                ops.append({"op": "input", "m": o.message, "p": o.part, "value": nb.get("input")})
            else:
                ops.append({"op": o.field, "m": o.message, "p": o.part, "value": _result_value(nb)})
        for extra in plain_new[len(plain_old):]:
            if extra.get("type") == "text":
                ops.append({"op": NOTE, "m": owner, "text": extra["text"]})
    return ops


def first_prompt(messages: list[Any]) -> str:
    """The text of the first user message a person wrote ('' if none: e.g. after a compaction,
    OpenCode's history starts with a `compaction` part)."""
    for msg in messages:
        if isinstance(msg, dict) and msg.get("role") == "user":
            texts = [p["text"] for p in msg.get("parts") or []
                     if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                     and not p.get("synthetic") and not p.get("ignored")]
            if any(p.get("type") == "compaction" for p in msg.get("parts") or [] if isinstance(p, dict)):
                return ""
            return "\n".join(texts)
    return ""


def as_export(session_id: str, messages: list[Any]) -> dict:
    """The messages in `opencode export` shape (`compress.formats.sessions.opencode` reads it)."""
    out = []
    for msg in messages:
        parts = []
        for p in msg.get("parts") or []:
            if p.get("type") == "tool":
                state = {"status": p.get("status"), "input": p.get("input")}
                state["error" if p.get("status") == "error" else "output"] = p.get("error", p.get("output"))
                parts.append({"type": "tool", "callID": p.get("callID"), "tool": p.get("tool"), "state": state})
            else:
                parts.append(p)
        out.append({"info": {"id": msg.get("id"), "role": msg.get("role")}, "parts": parts})
    return {"info": {"id": session_id}, "messages": out}
