"""How far a perfect guess of what the agent will copy could take the decide-once cap:
`python bench/oracle_reads.py [--corpus DIR] [name filter ...]`.

The oracle side is the cap (`compress.replay.cap`: every tool result over 2,000 characters keeps
its first and last 1,000, decided on arrival) except that a file read also keeps every line that
some edit of the session later copies (`compress.replay.needed.copied_lines`) - knowledge no
transform has when the read arrives. It is replayed beside raw, the cap and ctxmill with the same
counter and cost model (`compress.replay.runner.replay`), per session and in totals (sums of
costs). It bounds what any read policy built on arrival decisions can reach.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.formats.requests import SHAPES  # noqa: E402
from compress.formats.sessions import Transcript, UnknownFormat, read_session, session_files  # noqa: E402
from compress.line_numbers import NUMBER_PREFIX  # noqa: E402
from compress.memo import PerObject  # noqa: E402
from compress.model import TOOL_RESULT, TOOL_USE, Block  # noqa: E402
from compress.replay.cap import KEEP, LIMIT  # noqa: E402
from compress.replay.needed import Needed, copied_lines  # noqa: E402
from compress.replay.runner import replay  # noqa: E402
from compress.vocab.tools import ToolKind, tool_kind  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
SIDES = ("cap", "ctxmill", "oracle")
_NUMBERED = re.compile(f"^(?:{NUMBER_PREFIX})")


def oracle_for(transcript: Transcript) -> Callable[[dict], dict]:
    """Body -> body with the oracle's decisions (each message decided once, on arrival)."""
    shape = SHAPES[transcript.provider]
    future = {line for raw in transcript.messages for line in copied_lines(shape.parse_message(raw))}
    calls: dict[str, tuple[str, Any]] = {}

    def decide(block: Block) -> Block:
        if block.kind == TOOL_USE:
            calls[block.tool_id] = (block.tool_name, block.input)
        if block.kind != TOOL_RESULT or len(block.result_text) <= LIMIT:
            return block
        text = block.result_text
        kept = ""
        if tool_kind(*calls.get(block.tool_id, ("", None))) is ToolKind.FILE_READ:
            kept = "\n".join(line for line in text[KEEP:-KEEP].split("\n")
                             if _NUMBERED.sub("", line).strip() in future)
        return block.with_result_text(f"{text[:KEEP]}\n[… cut …]\n{kept}\n{text[-KEEP:]}")

    def message(raw: Any) -> Any:
        parsed = shape.parse_message(raw)
        return shape.render_message(parsed.with_blocks([decide(b) for b in parsed.blocks]))

    per_message = PerObject(message)
    field = shape.MESSAGES_FIELD
    return lambda body: {**body, field: [per_message(m) for m in body[field]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("names", nargs="*", help="replay only sessions whose file name holds one of these")
    args = parser.parse_args()
    files = [f for f in session_files(args.corpus / "transcripts") if not args.names or any(n in f.name for n in args.names)]
    raw = 0.0
    totals = {side: [0.0, 0.0, Needed()] for side in SIDES}
    for path in files:
        try:
            transcript = read_session(path)
        except UnknownFormat:
            continue
        report = replay(transcript, peers={"oracle": oracle_for(transcript)})
        raw += report.raw.cost
        sides = report.sides()
        cells = []
        for side in SIDES:
            stats = sides[side]
            total = totals[side]
            total[0] += stats.cost
            total[1] += stats.effective_cost
            total[2].merge(stats.needed)
            cells.append(f"{side} {report.ratio(stats):.3f} / {report.ratio(stats, True):.3f} / {stats.needed.fraction():.2f}")
        print(f"{path.name[:48]:48s} {report.requests:4d} req  " + "  ".join(cells), flush=True)
    for side, (cost, effective, needed) in totals.items():
        print(f"TOTAL {side:8s} modelled {cost / raw:.3f}  effective {effective / raw:.3f}  needed {needed.fraction():.3f}")


if __name__ == "__main__":
    main()
