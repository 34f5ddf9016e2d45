"""Replay every session of the shared corpus and write a markdown table.

    python bench/replay_corpus.py [--corpus DIR] [--out bench/results/replay.md]
                                  [--headroom /tmp/peer-headroom/bin/python] [--no-headroom]

Uses whatever `compress.pipeline.DEFAULT_STAGES` holds, the exact o200k counter and the cost
model of `replay.costmodel`, so re-running it after stages change refreshes the numbers.
The headroom-ai column (its model-free `compress()` applied to every request, priced with the
same counter and cost model in the same run) appears when headroom-ai is installed in a
separate venv (`python3 -m venv /tmp/peer-headroom && /tmp/peer-headroom/bin/pip install
headroom-ai`); otherwise it is left out. The corpus is ../shared/corpus (or $CTXMILL_CORPUS).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.formats.requests import SHAPES  # noqa: E402
from compress.formats.sessions import UnknownFormat, read_session, session_files  # noqa: E402
from compress.pipeline import DEFAULT_STAGES  # noqa: E402
from replay.headroom_peer import Headroom  # noqa: E402
from replay.needed import AGE_BUCKETS, Needed  # noqa: E402
from replay.runner import ReplayReport, replay  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
DEFAULT_PEER_PYTHON = Path("/tmp/peer-headroom/bin/python")
SIDES = ("cap", "ctxmill", "headroom")


def _pct(raw: int, out: int) -> str:
    return f"{100.0 * (out - raw) / raw:+.1f}%" if raw else "n/a"


def _side_cell(report: ReplayReport, name: str) -> str:
    side = report.sides().get(name)
    if side is None:
        return "–"
    return f"{report.ratio(side):.3f} / {report.ratio(side, True):.3f} / {side.needed.fraction():.2f}"


def table(reports: list[ReplayReport], sides: tuple[str, ...]) -> str:
    head = ["session", "format", "req", "raw tokens (sum / peak)", "ctxmill tokens (sum / peak)",
            *[f"{name} modelled / effective / needed" for name in sides],
            "compactions raw→ctxmill", "retained (recoverable / visible last 10 turns)", "p50 / p95 ms"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in reports:
        ret = r.retention
        cells = [Path(r.source).name[:48], r.format, str(r.requests),
                 f"{r.raw.tokens_sum:,} / {r.raw.tokens_peak:,}",
                 f"{_pct(r.raw.tokens_sum, r.compressed.tokens_sum)} / {_pct(r.raw.tokens_peak, r.compressed.tokens_peak)}",
                 *[_side_cell(r, name) for name in sides],
                 f"{r.raw.compactions}→{r.compressed.compactions}",
                 f"{ret.fraction('recoverable'):.0%} / {ret.fraction('recent_visible', 'recent'):.0%}",
                 f"{r.ms_p50:.1f} / {r.ms_p95:.1f}"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def totals(reports: list[ReplayReport], label: str, sides: tuple[str, ...]) -> list[str]:
    """Sums of costs (not means of ratios) and needed lines over `reports`, per side."""
    raw = sum(r.raw.cost for r in reports)
    if not raw:
        return []
    rows = []
    for name in sides:
        chosen = [r.sides()[name] for r in reports if name in r.sides()]
        if len(chosen) < len(reports):
            continue
        needed = Needed()
        for side in chosen:
            needed.merge(side.needed)
        rows.append(f"| {label} ({len(reports)}) | {name} | {sum(s.cost for s in chosen) / raw:.3f} | "
                    f"{sum(s.effective_cost for s in chosen) / raw:.3f} | {needed.fraction():.3f} "
                    f"({sum(needed.total.values()):,}) | " + " | ".join(f"{needed.fraction(b):.3f}" for b in AGE_BUCKETS) + " |")
    return rows


def usage_lines(reports: list[ReplayReport]) -> list[str]:
    out = []
    for r in reports:
        if r.usage and r.usage.compared >= 5:
            u = r.usage
            out.append(f"| {Path(r.source).name[:48]} | {u.compared} | {u.cost_ratio:.3f} | {u.median_abs_error:.1%} | "
                       f"{u.modelled_read_share:.1%} / {u.reported_read_share:.1%} |")
    if not out:
        return []
    return ["", "Cost model vs provider-reported usage (raw replay, calls before any host compaction):", "",
            "| session | calls | modelled / reported cost | median input error | cache-read share modelled / reported |",
            "|---|---|---|---|---|", *out]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "replay.md")
    ap.add_argument("--headroom", type=Path, default=DEFAULT_PEER_PYTHON, help="python of headroom-ai's venv")
    ap.add_argument("--no-headroom", action="store_true")
    args = ap.parse_args()
    folder = args.corpus / "transcripts"
    if not folder.is_dir():
        print(f"corpus not found at {folder}; nothing to replay", file=sys.stderr)
        return 0
    peer = None if args.no_headroom or not args.headroom.exists() else "headroom"
    sides = SIDES if peer else SIDES[:2]
    started = time.perf_counter()
    reports = []
    for path in session_files(folder):
        try:
            transcript = read_session(path)
        except UnknownFormat:
            continue
        worker = Headroom(args.headroom, SHAPES[transcript.provider].MESSAGES_FIELD) if peer else None
        try:
            report = replay(transcript, source=str(path), peers={peer: worker} if worker else None)
        finally:
            if worker:
                worker.close()
        print(f"{path.name[:60]:60} {report.requests:4d} req  " + "  ".join(
            f"{name} {_side_cell(report, name)}" for name in sides) + f"  {report.seconds:.1f}s", file=sys.stderr)
        reports.append(report)
    stages = ", ".join(s.name for s in DEFAULT_STAGES)
    counter = reports[0].counter if reports else "?"
    big = [r for r in reports if r.requests >= 100]
    summary = ["| sessions | side | modelled | effective | needed lines kept (count) | " + " | ".join(AGE_BUCKETS) + " |",
               "|---|---|---|---|---|" + "---|" * len(AGE_BUCKETS),
               *totals([r for r in reports if r.format == "claude-code"], "claude-code", sides),
               *totals(big, "≥ 100 requests", sides), *totals(reports, "all", sides)]
    text = "\n".join([
        f"Stages: {stages}. Tokens counted with {counter}; modelled cost per provider (Anthropic: cache read 0.1x, "
        f"write 1.25x base input price, 20-block lookback; OpenAI: cached input at the model's discount, no write "
        f"premium); effective = modelled + re-reads of lines the agent later copied into edits but could not see. "
        f"Host compactions start a new history (summary first). Cells: modelled / effective cost ratio (side / raw) / "
        f"needed lines kept.",
        "", table(reports, sides), "", "Totals (sums of costs, not means of ratios):", "", *summary,
        *usage_lines(reports),
        "", f"Replayed in {time.perf_counter() - started:.0f} s.",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
