"""How far perfect knowledge of the future could take the decide-once cap and ctxmill's own
decisions: `python bench/oracle_reads.py [--corpus DIR] [name filter ...]`.

Three sides know what no transform knows when an output arrives, and are replayed beside raw, the
cap and ctxmill with the same counter and cost model (`replay.runner.replay`), per
session and in totals (sums of costs):

- oracle: the cap (`replay.cap`: every tool result over 2,000 characters keeps its
  first and last 1,000, decided on arrival), except that a file read also keeps every line that
  some edit of the session later copies (`replay.needed.copied_lines`). It bounds what
  any read policy built on arrival decisions can reach.
- hindsight: every tool call and result rendered from its arrival on as ctxmill renders it in the
  last request of its history (`final_blocks`): ctxmill's decisions with perfect timing, no
  epoch and no wait.
- hindsight+copied: the same, and each result also keeps the lines some later edit copies from
  it or from its call's original input. It bounds what re-timing ctxmill's decisions can reach
  even with a perfect guess of what the agent will copy.
- told: ctxmill's own chain, told which files no later edit copies a line from (`unneeded_reads`):
  every read of those files is cut on arrival as the cap cuts it (`told_chain`). It bounds what
  any guess of which files a read is needed for could buy ctxmill.

Also printed: how many sessions with at least 100 requests cost more than the cap (effective),
for ctxmill and for told.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ccr.markers import format_marker  # noqa: E402
from ccr.store import CCRStore  # noqa: E402
from compress.formats.requests import SHAPES  # noqa: E402
from compress.formats.sessions import Transcript, UnknownFormat, read_session, session_files  # noqa: E402
from compress.model import TOOL_RESULT, TOOL_USE, Block  # noqa: E402
from compress.runner.pipeline import Chain, run  # noqa: E402
from compress.stagekit.line_numbers import NUMBER_PREFIX  # noqa: E402
from compress.stagekit.memo import PerObject  # noqa: E402
from compress.stagekit.stage import Stage, StageContext, each_block  # noqa: E402
from compress.state.session import Session  # noqa: E402
from compress.tiers import Tier  # noqa: E402
from compress.vocab.calls import first_path  # noqa: E402
from compress.vocab.tools import ToolKind, tool_kind  # noqa: E402
from compress.vocab.touches import same_file  # noqa: E402
from ground.jsonvalues import strings_in  # noqa: E402
from replay.cap import KEEP, LIMIT  # noqa: E402
from replay.needed import Needed, copied_lines  # noqa: E402
from replay.runner import replay  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
SIDES = ("cap", "ctxmill", "oracle", "hindsight", "hindsight+copied", "told")
BIG_SESSION = 100
"""Requests from which a session must cost no more than the cap (issue 28's per-session target)."""
_NUMBERED = re.compile(f"^(?:{NUMBER_PREFIX})")


def future_copies(transcript: Transcript) -> set[str]:
    """Every line some edit of the session copies (as `copied_lines` strips it)."""
    shape = SHAPES[transcript.provider]
    return {line for raw in transcript.messages for line in copied_lines(shape.parse_message(raw))}


def copied(lines: Iterable[str], future: set[str]) -> list[str]:
    """The lines (line-number prefixes ignored) that some edit copies, in order."""
    return [line for line in lines if _NUMBERED.sub("", line).strip() in future]


def per_message(transcript: Transcript, decide: Callable[[Block], Block]) -> Callable[[dict], dict]:
    """Body -> body with `decide` applied to every block, each message decided once."""
    shape = SHAPES[transcript.provider]

    def message(raw: Any) -> Any:
        parsed = shape.parse_message(raw)
        blocks = [decide(b) for b in parsed.blocks]
        if all(new is old for new, old in zip(blocks, parsed.blocks)):
            return raw
        if len(blocks) == 1 and parsed.blocks[0].raw is raw:
            # an item that is its one block (OpenAI Responses): a block taken from another
            # request renders from its own item
            parsed = replace(parsed, raw=blocks[0].raw)
        return shape.render_message(parsed.with_blocks(blocks))

    once = PerObject(message)
    field = shape.MESSAGES_FIELD
    return lambda body: {**body, field: [once(m) for m in body[field]]}


def oracle_for(transcript: Transcript) -> Callable[[dict], dict]:
    """Body -> body with the oracle's decisions (each message decided once, on arrival)."""
    future = future_copies(transcript)
    calls: dict[str, tuple[str, Any]] = {}

    def decide(block: Block) -> Block:
        if block.kind == TOOL_USE:
            calls[block.tool_id] = (block.tool_name, block.input)
        if block.kind != TOOL_RESULT or len(block.result_text) <= LIMIT:
            return block
        text = block.result_text
        kept = ""
        if tool_kind(*calls.get(block.tool_id, ("", None))) is ToolKind.FILE_READ:
            kept = "\n".join(copied(text[KEEP:-KEEP].split("\n"), future))
        return block.with_result_text(f"{text[:KEEP]}\n[… cut …]\n{kept}\n{text[-KEEP:]}")

    return per_message(transcript, decide)


def final_blocks(transcript: Transcript) -> dict[tuple[str, str], Block]:
    """(kind, tool id) -> each tool call and result as ctxmill renders it in the last request of
    its history (default config)."""
    shape = SHAPES[transcript.provider]
    store = CCRStore.in_memory()
    final: dict[tuple[str, str], Block] = {}
    for history in transcript.segments():
        session = Session.memory()
        body: dict = {}
        for call in (c for c in history.calls if c.index > 0):
            body = run(history.whole(call.index), session=session, store=store).body
        for raw in body.get(shape.MESSAGES_FIELD, ()):
            for block in shape.parse_message(raw).blocks:
                if block.kind in (TOOL_USE, TOOL_RESULT):
                    final[(block.kind, block.tool_id)] = block
    return final


def hindsight_for(transcript: Transcript, final: dict[tuple[str, str], Block],
                  keep_copied: bool) -> Callable[[dict], dict]:
    """Body -> body with `final`'s rendering of every tool call and result from its arrival on;
    `keep_copied`: a result also keeps the lines some later edit copies from it or from its
    call's original input that the final renderings of both lack."""
    future = future_copies(transcript) if keep_copied else set()
    inputs: dict[str, Block] = {}

    def decide(block: Block) -> Block:
        if block.kind == TOOL_USE:
            inputs[block.tool_id] = block
        chosen = final.get((block.kind, block.tool_id), block)
        if not keep_copied or block.kind != TOOL_RESULT:
            return chosen
        call = inputs.get(block.tool_id)
        final_call = final.get((TOOL_USE, block.tool_id), call)
        shown = {_NUMBERED.sub("", line).strip() for line in chosen.result_text.split("\n")}
        shown.update(line.strip() for text in strings_in(final_call.input if final_call else None)
                     for line in text.split("\n"))
        sources = block.result_text.split("\n") + [line for text in strings_in(call.input if call else None)
                                                    for line in text.split("\n")]
        kept = dict.fromkeys(line for line in copied(sources, future) if _NUMBERED.sub("", line).strip() not in shown)
        return chosen.with_result_text(chosen.result_text + "\n" + "\n".join(kept)) if kept else chosen

    return per_message(transcript, decide)


def unneeded_reads(transcript: Transcript) -> frozenset[str]:
    """Tool ids of the file reads whose file no later edit copies a line from: no read of that
    file holds a line (line-number prefix ignored) that an edit after it copies."""
    shape = SHAPES[transcript.provider]
    messages = [shape.parse_message(raw) for raw in transcript.messages]
    last_copied = {line: i for i, msg in enumerate(messages) for line in copied_lines(msg)}  # the last edit's message
    calls: dict[str, tuple[str, Any]] = {}
    reads: list[tuple[str, str]] = []  # (tool id, path)
    needed: list[str] = []
    for i, msg in enumerate(messages):
        for block in msg.blocks:
            if block.kind == TOOL_USE:
                calls[block.tool_id] = (block.tool_name, block.input)
            elif block.kind == TOOL_RESULT and tool_kind(*calls.get(block.tool_id, ("", None))) is ToolKind.FILE_READ:
                path = first_path(*calls[block.tool_id])
                reads.append((block.tool_id, path))
                if any(last_copied.get(_NUMBERED.sub("", line).strip(), -1) > i
                       for line in block.result_text.split("\n")):
                    needed.append(path)
    return frozenset(tool_id for tool_id, path in reads
                     if path and not any(same_file(path, other) for other in needed))


def told_chain(unneeded: frozenset[str]) -> Chain:
    """ctxmill's chain with one stage first: each read in `unneeded` (tool ids) is cut on arrival
    to its first and last 1,000 characters, as the cap cuts it, the original in CCR."""

    def cut(messages: list, ctx: StageContext) -> list:
        def decide(msg: Any, block: Block) -> Block:
            text = block.result_text
            if block.tool_id not in unneeded or len(text) <= LIMIT or not ctx.may_compress_result(block):
                return block
            return block.with_result_text(ctx.lossy(text, lambda key: "\n".join(
                [text[:KEEP], format_marker("a read no later edit copies from, cut as the cap cuts it", key),
                 text[-KEEP:]]), ctx.rerun_hint(block)))

        return each_block(messages, ctx, decide, "told: a read no later edit copies from")

    chain = Chain()
    return chain.before(chain.names()[0], Stage("told_unneeded", cut, Tier.ALWAYS, decides_on_arrival=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("names", nargs="*", help="replay only sessions whose file name holds one of these")
    args = parser.parse_args()
    files = [f for f in session_files(args.corpus / "transcripts") if not args.names or any(n in f.name for n in args.names)]
    raw = 0.0
    totals = {side: [0.0, 0.0, Needed()] for side in SIDES}
    big, dearer = 0, {"ctxmill": 0, "told": 0}
    for path in files:
        try:
            transcript = read_session(path)
        except UnknownFormat:
            continue
        final = final_blocks(transcript)
        report = replay(transcript, peers={"oracle": oracle_for(transcript),
                                           "hindsight": hindsight_for(transcript, final, False),
                                           "hindsight+copied": hindsight_for(transcript, final, True)})
        told = replay(transcript, chain=told_chain(unneeded_reads(transcript)))
        raw += report.raw.cost
        sides = {**report.sides(), "told": told.compressed}
        cells = []
        for side in SIDES:
            stats = sides[side]
            total = totals[side]
            total[0] += stats.cost
            total[1] += stats.effective_cost
            total[2].merge(stats.needed)
            cells.append(f"{side} {report.ratio(stats):.3f} / {report.ratio(stats, True):.3f} / {stats.needed.fraction():.2f}")
        print(f"{path.name[:48]:48s} {report.requests:4d} req  " + "  ".join(cells), flush=True)
        if report.requests >= BIG_SESSION:
            big += 1
            for side in dearer:
                dearer[side] += sides[side].effective_cost > sides["cap"].effective_cost
    for side, (cost, effective, needed) in totals.items():
        print(f"TOTAL {side:16s} modelled {cost / raw:.3f}  effective {effective / raw:.3f}  needed {needed.fraction():.3f}")
    for side, count in dearer.items():
        print(f"DEARER THAN THE CAP {side}: {count} of {big} sessions with at least {BIG_SESSION} requests")


if __name__ == "__main__":
    main()
