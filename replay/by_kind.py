"""Where a side's modelled cost goes, by kind of content (`replay(..., by_kind=True)`).

Each request is priced as the replay prices it; every content block then carries its share:
its tokens at the cache-read price when the provider read it from cache
(`Priced.cache.read_blocks`), else at the write price. What is left of a request's cost is its
head (system prompt, tools). The kinds are coarse on purpose: what a stage may shorten (tool
output by kind, write and edit inputs) and what the chain leaves as it is.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from compress.formats.requests import SHAPES
from compress.model import REDACTED_THINKING, THINKING, TOOL_RESULT, TOOL_USE, Block, Message
from compress.vocab.calls import touched_files
from compress.vocab.tools import PROTECTED_TOOLS, ToolKind, is_protected_tool, tool_kind
from compress.vocab.touches import CHANGES
from replay.pricing import Priced, RequestAccountant

FILE_READS = "file reads"
COMMAND_OUTPUT = "command output"
OTHER_OUTPUT = "search, listing, subagent, web, other output"
PROTECTED_OUTPUT = "protected tools' output"
CHANGE_INPUTS = "file-changing inputs (write, edit, patch)"
OTHER_INPUTS = "other tool inputs"
ASSISTANT_TEXT = "assistant text"
THINKING_KIND = "thinking"
USER_TEXT = "user text"
HEAD = "head (system prompt, tools)"
KINDS = (FILE_READS, COMMAND_OUTPUT, OTHER_OUTPUT, PROTECTED_OUTPUT, CHANGE_INPUTS, OTHER_INPUTS,
         ASSISTANT_TEXT, THINKING_KIND, USER_TEXT, HEAD)
"""Every kind, in the order reports list them."""
_OUTPUT_KIND = {ToolKind.FILE_READ: FILE_READS, ToolKind.COMMAND: COMMAND_OUTPUT}


def kind_of(block: Block | None, msg: Message, calls: dict[str, tuple[str, Any]]) -> str:
    """The kind a block's cost goes to (`calls`: tool id -> (name, input) in the request; a
    message without blocks is None)."""
    if block is None or block.kind not in (THINKING, REDACTED_THINKING, TOOL_USE, TOOL_RESULT):
        return ASSISTANT_TEXT if msg.role == "assistant" else USER_TEXT
    if block.kind == TOOL_USE:
        changes = any(t.action in CHANGES for t in touched_files(block.tool_name, block.input))
        return CHANGE_INPUTS if changes else OTHER_INPUTS
    if block.kind == TOOL_RESULT:
        name, tool_input = calls.get(block.tool_id, ("", None))
        if is_protected_tool(name, PROTECTED_TOOLS, tool_input):
            return PROTECTED_OUTPUT
        return _OUTPUT_KIND.get(tool_kind(name, tool_input), OTHER_OUTPUT)
    return THINKING_KIND


class CostByKind:
    """Sums each side's cost per kind over the requests it is shown (`add`)."""

    def __init__(self, provider: str) -> None:
        self.parse = SHAPES[provider].parse_message
        self.field = SHAPES[provider].MESSAGES_FIELD
        self.costs: dict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))

    def add(self, side: str, body: dict, priced: Priced, accountant: RequestAccountant) -> None:
        messages = [self.parse(m) for m in body[self.field]]
        calls = {b.tool_id: (b.tool_name, b.input) for m in messages for b in m.blocks if b.kind == TOOL_USE}
        prices = accountant.prices
        spent = 0.0
        for position, (i, j, tokens) in enumerate(accountant.sent_blocks(body)):
            msg = messages[i]
            cost = (prices.read if position < priced.cache.read_blocks else prices.write) * tokens
            self.costs[side][kind_of(msg.blocks[j] if msg.blocks else None, msg, calls)] += cost
            spent += cost
        self.costs[side][HEAD] += max(0.0, priced.cost - spent)  # float noise only

    def result(self) -> dict[str, dict[str, float]]:
        """Side -> kind -> cost (every kind listed, in `KINDS` order)."""
        return {side: {kind: round(costs[kind], 2) for kind in KINDS} for side, costs in self.costs.items()}


def summed(parts: Iterable[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Side -> kind -> cost, summed over several replays' `by_kind`."""
    totals: dict[str, Counter] = defaultdict(Counter)
    for part in parts:
        for side, costs in part.items():
            totals[side].update(costs)
    return {side: dict(costs) for side, costs in totals.items()}


def table_lines(by_kind: dict[str, dict[str, float]], raw_cost: float) -> list[str]:
    """A text table of each side's cost per kind, as shares of the raw side's cost ([] if none)."""
    if not by_kind or not raw_cost:
        return []
    names = list(by_kind)
    lines = ["  cost by kind of content, as shares of the raw side's cost:",
             "    " + " " * 44 + "  ".join(f"{n:>8}" for n in names)]
    for kind in (*KINDS, "all"):
        cells = [sum(by_kind[n].values()) if kind == "all" else by_kind[n].get(kind, 0.0) for n in names]
        lines.append(f"    {kind:<44}" + "  ".join(f"{c / raw_cost:8.3f}" for c in cells))
    return lines
