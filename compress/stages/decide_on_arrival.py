"""decide_on_arrival: cut a long command, search, listing or other tool output once, when it
arrives, and never again.

Output whose future use is unlikely (build and test logs, long listings, search hits, tool
dumps) is decided in the request that first carries it, protected tail included, with the line
budgets of `compress.output_trim.TrimOptions` at `scale` (option, default 0.25): command output
keeps its head, tail and every error line with context, search hits their first files and lines
per file, listings are grouped by directory. An output longer than `min_chars` (option, default
2,000, the decide-once cap's limit) is cut; JSON is left whole for crush_json, file reads for trim_outputs, and the results
of protected tools are never cut. Every cut stores the original in CCR first and says what was
kept.

What must hold: the decision is a pure function of the result and its call (no tier, age or
neighbour enters it), so an epoch that re-decides the message renders the same bytes and the
provider's cached prefix stays valid; the runner lets this stage, and only it, change the tool
results of the newest messages (`Stage.decides_on_arrival`).
"""

from __future__ import annotations

from dataclasses import dataclass

from compress.config import options_as
from compress.lossy import accept
from compress.model import Block, Message
from compress.output_trim import TrimOptions, trimmed
from compress.stage import Stage, StageContext, each_block
from compress.tiers import Tier
from compress.vocab.tools import ToolKind, tool_kind
from ground.jsonbytes import parse_document

ARRIVING_KINDS = frozenset({ToolKind.COMMAND, ToolKind.SEARCH, ToolKind.FILE_LIST, ToolKind.OTHER})
"""Kinds decided on arrival; file reads, subagent and web output are the agent's working
material and are decided later (trim_outputs)."""


@dataclass(frozen=True)
class ArrivalOptions:
    min_chars: int = 2_000
    scale: float = 0.25


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    opts = options_as(ArrivalOptions, ctx.config.options("decide_on_arrival"))
    budgets = options_as(TrimOptions, ctx.config.options("trim_outputs"))

    def decide(msg: Message, block: Block) -> Block:
        if not ctx.may_compress_result(block) or len(block.result_text) <= opts.min_chars:
            return block
        return _decide(block, ctx, opts, budgets)

    return each_block(messages, ctx, decide, "decided a tool output on arrival")


def _decide(block: Block, ctx: StageContext, opts: ArrivalOptions, budgets: TrimOptions) -> Block:
    kind = tool_kind(block.tool_name, block.call_input)
    text = block.result_text
    if kind not in ARRIVING_KINDS or parse_document(text) is not None:
        return block
    budget = budgets.budget(opts.scale, kind)
    short = accept(ctx, text, lambda key: trimmed(text, kind, budget, key, "", budgets.base64_min_chars, True),
                   ctx.rerun_hint(block))
    return block.with_result_text(short)


STAGE = Stage("decide_on_arrival", run, Tier.ALWAYS, decides_on_arrival=True)
