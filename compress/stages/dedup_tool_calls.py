"""dedup_tool_calls: an earlier tool result that a later identical call repeats becomes a pointer.

Two calls are identical when their signature (tool name + arguments canonicalised recursively:
keys sorted, nulls dropped) and their result (error flag + text) are equal. Of each group of
identical calls the LATEST keeps its result whole; every earlier result in a mutable message
becomes `[ctxmill: same output as the call at turn 41 · deep_expand("…")]`, its original in
CCR. Both halves of every call stay (ids, names, inputs untouched); only result text changes.

Holds: results of protected tools, results already carrying a marker, results with non-text
parts (images) and failed results (`compress.vocab.signals.errors.is_failed_result`: a pointer
would hide that the call failed, and later stages read a failed write as no write;
`purge_errors` shortens old failures) are never touched; a pointer is written only under the common saving
rule. Only mutable messages change, so in an incremental run a frozen earlier copy stays whole
until the next epoch. A second run finds no group (pointers differ from the text they replace).
"""

from __future__ import annotations

from typing import Any

import xxhash

from ccr.markers import format_marker
from compress.model import TEXT, Block, Message, ToolCall, index_tool_calls
from compress.stagekit.stage import BlockEdit, Stage, StageContext, edit_blocks
from compress.tiers import Tier
from compress.vocab.signals.errors import is_failed_result
from ground.jsonbytes import dumps


def canonical(value: Any) -> Any:
    """Arguments in a form where equal meaning gives equal JSON: keys sorted, nulls dropped."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value) if value[k] is not None}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def call_fingerprint(name: str, tool_input: Any, result: Block) -> str:
    """Equal for two calls with the same tool, canonical arguments and result."""
    payload = dumps([name, canonical(tool_input), result.is_error, result.result_text])
    return xxhash.xxh3_128_hexdigest(payload)


def _pointer(turn: int, ctx: StageContext) -> BlockEdit:
    def edit(block: Block) -> Block:
        text = block.result_text
        summary = f"same output as the call at turn {turn}"
        return block.with_result_text(ctx.lossy(text, lambda key: format_marker(summary, key),
                                                      hint=ctx.rerun_hint(block)))

    return edit


def _candidates(messages: list[Message], ctx: StageContext) -> list[ToolCall]:
    """Calls that may be in a group with an earlier mutable result: those whose tool and
    arguments some call with a mutable result shares (results are hashed only for these)."""
    by_call: dict[str, list[ToolCall]] = {}
    for call in index_tool_calls(messages).values():
        if call.result_msg >= 0:
            use = messages[call.use_msg].blocks[call.use_block]
            by_call.setdefault(dumps([call.name, canonical(use.input)]).decode(), []).append(call)
    return [call for calls in by_call.values() if len(calls) > 1 and any(ctx.mutable[c.result_msg] for c in calls)
            for call in calls]


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    groups: dict[str, list[ToolCall]] = {}
    for call in _candidates(messages, ctx):
        result = messages[call.result_msg].blocks[call.result_block]
        if any(p.kind != TEXT for p in result.parts) or not ctx.may_compress_result(result) or is_failed_result(result):
            continue
        use = messages[call.use_msg].blocks[call.use_block]
        groups.setdefault(call_fingerprint(call.name, use.input, result), []).append(call)

    edits: dict[int, dict[int, BlockEdit]] = {}
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda c: (c.result_msg, c.result_block))
        latest_turn = messages[group[-1].use_msg].turn
        for call in group[:-1]:
            edits.setdefault(call.result_msg, {})[call.result_block] = _pointer(latest_turn, ctx)
    return edit_blocks(messages, ctx, edits, "replaced a repeated tool result by a pointer to the latest call")


STAGE = Stage("dedup_tool_calls", run, Tier.ALWAYS)
