"""purge_errors: shrink tool calls that failed more than `min_age` turns ago.

A call failed when `compress.vocab.signals.errors.is_failed_result` says so of its result. Once
its tool_use is older than `min_age` assistant turns (counted from the epoch anchor, `ctx.age`):
- its result keeps the first `keep_chars` characters visibly, plus the first error line
  (`compress.vocab.signals.errors.first_error_line`, up to 2,000 chars) when that is not among
  them, then `[ctxmill: error output cut: … · deep_expand("…")]`;
- every string of its input longer than `input_min_chars` (a rejected file body, a long
  old_string) becomes a note `<<ctxmill: 412-line content for src/app.py stored; this call
  failed at turn 12 · deep_expand("…")>>`.

Inputs change only in the stages made for superseded or failed inputs; this is one of them
(`may_edit_inputs=True`), and it edits inputs only through `compress.stagekit.inputnotes`, which keeps
the input's shape and ties every note to the exact original. It is a stage of its own rather
than part of `supersede_inputs` because failed calls are purged from the `always` tier.

Options (`[compress.stages.purge_errors]`, `PurgeOptions`): min_age (4), keep_chars (300), input_min_chars (200).
"""

from __future__ import annotations

from dataclasses import dataclass

from ccr.markers import format_marker
from compress.config import options_as
from compress.model import Block, Message, index_tool_calls
from compress.stagekit.inputnotes import KeyPath, field_name, large_strings, line_count, note_strings, short_path
from compress.stagekit.stage import BlockEdit, Stage, StageContext, edit_blocks
from compress.tiers import Tier
from compress.vocab.calls import touched_files
from compress.vocab.signals.errors import first_error_line, is_failed_result


@dataclass(frozen=True)
class PurgeOptions:
    min_age: int = 4
    keep_chars: int = 300
    input_min_chars: int = 200

ERROR_LINE_MAX = 2_000
"""A first error line further down is kept up to this many characters."""


def _cut_error(keep: int, ctx: StageContext) -> BlockEdit:
    def edit(block: Block) -> Block:
        text = block.result_text
        head = text[:keep]
        first = first_error_line(text)
        extra = f"\n{first[:ERROR_LINE_MAX]}" if first and first not in head else ""
        kept = f"the first {keep:,} of {len(text):,} chars" + (" and the first error line" if extra else "")
        summary = f"error output cut: kept {kept}"
        return block.with_result_text(ctx.lossy(text, lambda key: f"{head}{extra}\n{format_marker(summary, key)}",
                                                hint=ctx.rerun_hint(block)))

    return edit


def _purge_input(turn: int, min_chars: int, ctx: StageContext) -> BlockEdit:
    def edit(block: Block) -> Block:
        files = touched_files(block.tool_name, block.input)
        where = f" for {short_path(files[0].path)}" if files else ""

        def summarize(path: KeyPath, text: str) -> str:
            return f"{line_count(text)}-line {field_name(path)}{where} stored; this call failed at turn {turn}"

        return note_strings(block, large_strings(block.input, min_chars), ctx, summarize)

    return edit


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    options = options_as(PurgeOptions, ctx.config.options("purge_errors"))
    edits: dict[int, dict[int, BlockEdit]] = {}
    for call in index_tool_calls(messages).values():
        if call.result_msg < 0:
            continue
        use_msg, result = messages[call.use_msg], messages[call.result_msg].blocks[call.result_block]
        if ctx.age(use_msg) <= options.min_age or not is_failed_result(result):
            continue
        if ctx.may_compress_result(result):
            edits.setdefault(call.result_msg, {})[call.result_block] = _cut_error(options.keep_chars, ctx)
        edits.setdefault(call.use_msg, {})[call.use_block] = _purge_input(use_msg.turn, options.input_min_chars, ctx)
    return edit_blocks(messages, ctx, edits, "cut a failed call older than the error age")


STAGE = Stage("purge_errors", run, Tier.ALWAYS, may_edit_inputs=True, options=PurgeOptions)
