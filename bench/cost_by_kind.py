"""Where the modelled cost goes, by kind of content, for raw, the decide-once cap and ctxmill:
`python bench/cost_by_kind.py [--corpus DIR] [--out bench/results/cost_by_kind.md] [name filter ...]`.

Each side of `compress.replay.runner.replay` is priced as the replay prices it (same counter,
same cache model); every content block then carries its share: its tokens at the cache-read
price when the provider read it from cache (`Priced.cache.read_blocks`), else at the write price.
What is left of a request's cost is its head (system prompt, tools). Shares are of the raw
side's total cost over all sessions (sums of costs), so a row says how much of what an
uncompressed session costs that kind of content still costs on each side.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.formats.requests import SHAPES  # noqa: E402
from compress.formats.sessions import UnknownFormat, read_session, session_files  # noqa: E402
from compress.model import REDACTED_THINKING, TEXT, THINKING, TOOL_RESULT, TOOL_USE, Block, Message  # noqa: E402
from compress.replay.pricing import Priced, RequestAccountant  # noqa: E402
from compress.replay.runner import replay  # noqa: E402
from compress.vocab.calls import touched_files  # noqa: E402
from compress.vocab.tools import PROTECTED_TOOLS, ToolKind, is_protected_tool, tool_kind  # noqa: E402
from compress.vocab.touches import CHANGES  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
SIDES = ("raw", "cap", "ctxmill")
HEAD = "head (system prompt, tools)"
KINDS = ("file reads", "command output", "search, listing, subagent, web, other output",
         "protected tools' output", "file-changing inputs (write, edit, patch)", "other tool inputs",
         "assistant text", "thinking", "user text", HEAD)
_OUTPUT_KIND = {ToolKind.FILE_READ: KINDS[0], ToolKind.COMMAND: KINDS[1]}


def kind_of(block: Block | None, msg: Message, calls: dict[str, tuple[str, Any]]) -> str:
    """The row a block's cost goes to (`calls`: tool id -> (name, input) of the request)."""
    if block is None or block.kind == TEXT:
        return "assistant text" if msg.role == "assistant" else "user text"
    if block.kind in (THINKING, REDACTED_THINKING):
        return "thinking"
    if block.kind == TOOL_USE:
        changes = any(t.action in CHANGES for t in touched_files(block.tool_name, block.input))
        return KINDS[4] if changes else KINDS[5]
    if block.kind == TOOL_RESULT:
        name, tool_input = calls.get(block.tool_id, ("", None))
        if is_protected_tool(name, PROTECTED_TOOLS):
            return KINDS[3]
        return _OUTPUT_KIND.get(tool_kind(name, tool_input), KINDS[2])
    return "assistant text" if msg.role == "assistant" else "user text"


class CostByKind:
    """An `observe` callback for `replay` that sums each side's cost per kind of content."""

    def __init__(self, provider: str) -> None:
        self.parse = SHAPES[provider].parse_message
        self.field = SHAPES[provider].MESSAGES_FIELD
        self.totals: dict[str, Counter] = {side: Counter() for side in SIDES}

    def __call__(self, side: str, body: dict, priced: Priced, accountant: RequestAccountant) -> None:
        if side not in self.totals:
            return
        messages = [self.parse(m) for m in body[self.field]]
        calls = {b.tool_id: (b.tool_name, b.input) for m in messages for b in m.blocks if b.kind == TOOL_USE}
        prices = accountant.prices
        spent = 0.0
        for position, (i, j, tokens) in enumerate(accountant.sent_blocks(body)):
            msg = messages[i]
            price = prices.read if position < priced.cache.read_blocks else prices.write
            self.totals[side][kind_of(msg.blocks[j] if msg.blocks else None, msg, calls)] += price * tokens
            spent += price * tokens
        self.totals[side][HEAD] += priced.cost - spent


def table(totals: dict[str, Counter]) -> list[str]:
    raw = sum(totals["raw"].values()) or 1.0
    lines = ["| content | " + " | ".join(SIDES) + " |", "|---|" + "---:|" * len(SIDES)]
    for kind in KINDS:
        lines.append(f"| {kind} | " + " | ".join(f"{totals[s][kind] / raw:.3f}" for s in SIDES) + " |")
    lines.append("| **all** | " + " | ".join(f"**{sum(totals[s].values()) / raw:.3f}**" for s in SIDES) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "cost_by_kind.md")
    parser.add_argument("names", nargs="*", help="replay only sessions whose file name holds one of these")
    args = parser.parse_args()
    files = [f for f in session_files(args.corpus / "transcripts") if not args.names or any(n in f.name for n in args.names)]
    totals: dict[str, Counter] = {side: Counter() for side in SIDES}
    sessions = 0
    for path in files:
        try:
            transcript = read_session(path)
        except UnknownFormat:
            continue
        observer = CostByKind(transcript.provider)
        replay(transcript, observe=observer)
        for side in SIDES:
            totals[side].update(observer.totals[side])
        sessions += 1
    lines = [f"Cost by kind of content, {sessions} sessions (share of the raw side's modelled cost):", "",
             *table(totals)]
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
