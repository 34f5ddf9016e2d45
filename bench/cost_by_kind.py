"""Where the modelled cost goes, by kind of content, for raw, the decide-once cap and ctxmill:
`python bench/cost_by_kind.py [--corpus DIR] [--out bench/results/cost_by_kind.md] [name filter ...]`.

Replays every corpus session with `replay(..., by_kind=True)` (`replay.by_kind`: each
content block's tokens at the cache-read price when the provider read it from cache, else at the
write price; the rest of a request's cost is its head) and sums the sessions. Shares are of the
raw side's total cost (sums of costs), so a row says how much of what an uncompressed session
costs that kind of content still costs on each side. `ctxmill replay --by-kind` shows the same
for any session.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.formats.sessions import UnknownFormat, read_session, session_files  # noqa: E402
from replay.by_kind import KINDS, summed  # noqa: E402
from replay.costmodel import share_with_head  # noqa: E402
from replay.runner import replay  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
SIDES = ("raw", "cap", "ctxmill")


def table(totals: dict[str, dict[str, float]], raw: float) -> list[str]:
    lines = ["| content | " + " | ".join(SIDES) + " |", "|---|" + "---:|" * len(SIDES)]
    for kind in KINDS:
        lines.append(f"| {kind} | " + " | ".join(f"{totals[s][kind] / raw:.3f}" for s in SIDES) + " |")
    lines.append("| **all** | " + " | ".join(f"**{sum(totals[s].values()) / raw:.3f}**" for s in SIDES) + " |")
    return lines


def unseen_head_line(totals: dict[str, dict[str, float]], raw: float, unseen: float) -> str:
    """The sides' totals counting the system prompt and tools the recordings lack
    (`ReplayReport.unseen_head_cost`), the same on every side."""
    shares = ", ".join(f"{s} {share_with_head(sum(totals[s].values()), raw, unseen):.3f}" for s in SIDES)
    return (f"Counting the host's system prompt and tools, which the recordings lack (estimated per session "
            f"as the median gap between the reported and the modelled input, so it also absorbs the "
            f"token counter's difference): {shares}.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "cost_by_kind.md")
    parser.add_argument("names", nargs="*", help="replay only sessions whose file name holds one of these")
    args = parser.parse_args()
    files = [f for f in session_files(args.corpus / "transcripts") if not args.names or any(n in f.name for n in args.names)]
    parts: list[dict[str, dict[str, float]]] = []
    raw = unseen = 0.0
    for path in files:
        try:
            transcript = read_session(path)
        except UnknownFormat:
            continue
        report = replay(transcript, by_kind=True)
        parts.append(report.by_kind)
        raw += report.raw.cost
        unseen += report.unseen_head_cost
    totals = summed(parts)
    lines = [f"Cost by kind of content, {len(parts)} sessions (share of the raw side's modelled cost):", "",
             *table(totals, raw or 1.0), "", unseen_head_line(totals, raw, unseen)]
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
