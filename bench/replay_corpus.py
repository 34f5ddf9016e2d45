"""Replay every session of the shared corpus and write a markdown table.

    python bench/replay_corpus.py [--corpus DIR] [--out bench/results/replay.md]
                                  [--headroom /tmp/peer-headroom/bin/python] [--no-headroom]
                                  [--grid default|small] [--times both|with|without] [--only REGEX]

Uses whatever `compress.runner.pipeline.DEFAULT_STAGES` holds, the exact o200k counter and the cost
model of `replay.costmodel`, so re-running it after stages change refreshes the numbers.
Every session is replayed once per point of the grid (`KNOBS`: the thresholds the replay helps
choose, as stage options of the chain config) and the choice is judged leave-one-project-out
(`replay.loo`): per project and in totals, the in-sample figures (the point chosen on all
projects) beside the held-out ones (each project scored with the point chosen without it),
and which sessions miss the targets the docs state. Every session is replayed twice (`--times`):
with the request times it recorded, and without (a person who never pauses: no cache expires,
and the pipeline is told no time), and both are judged. The per-session table and the headroom-ai
column are for the default configuration (headroom with times only). `--only` replays the
sessions whose file name matches a regular expression, for quick iteration.
The headroom-ai column (its model-free `compress()` applied to every request, priced with the
same counter and cost model in the same run) appears when headroom-ai is installed in a
separate venv (`python3 -m venv /tmp/peer-headroom && /tmp/peer-headroom/bin/pip install
headroom-ai`); otherwise it is left out. The corpus is ../shared/corpus (or $CTXMILL_CORPUS).
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.config import CompressConfig  # noqa: E402
from compress.formats.sessions import UnknownFormat, read_session, session_files  # noqa: E402
from compress.runner.pipeline import DEFAULT_STAGES  # noqa: E402
from compress.stagekit.output_cut import TrimOptions  # noqa: E402
from compress.stages import decide_on_arrival, supersede_inputs  # noqa: E402
from replay.headroom_peer import Headroom  # noqa: E402
from replay.loo import Grid, Point, Score, score, target_misses, validate  # noqa: E402
from replay.needed import AGE_BUCKETS  # noqa: E402
from replay.runner import ReplayReport, replay  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
DEFAULT_PEER_PYTHON = Path("/tmp/peer-headroom/bin/python")
SIDES = ("cap", "ctxmill", "headroom")
KNOBS = {("supersede_inputs", "settled_tier"): ("always", "high"), ("decide_on_arrival", "reports"): (False, True)}
"""The thresholds the replay helps choose (stage options) and the values tried: `--grid small`
replays every combination; `--grid default` only the shipped values. Earlier runs chose
trim_outputs' `cold_ref_chars`, `cold_ref_changed`, `report_fresh_turns` and `cold_after_commit`
the same way (docs/replay-results.md); their shipped values stay in `TrimOptions`."""
SHIPPED = {"trim_outputs": vars(TrimOptions()), "supersede_inputs": vars(supersede_inputs.SupersedeOptions()),
           "decide_on_arrival": vars(decide_on_arrival.ArrivalOptions())}


def grid_points(grid: str) -> tuple[list[Point], str]:
    """The points to replay and the name of the shipped one."""
    def name(values) -> str:
        return ", ".join(f"{option} {value}" for (_, option), value in zip(KNOBS, values))

    shipped = tuple(SHIPPED[stage][option] for stage, option in KNOBS)
    combos = list(itertools.product(*KNOBS.values())) if grid == "small" else [shipped]
    points = []
    for values in combos:
        options: dict[str, dict] = {}
        for (stage, option), value in zip(KNOBS, values):
            options.setdefault(stage, {})[option] = value
        points.append(Point(name(values), options))
    return points, name(shipped)


def _pct(raw: int, out: int) -> str:
    return f"{100.0 * (out - raw) / raw:+.1f}%" if raw else "n/a"


def _side_cell(report: ReplayReport, name: str) -> str:
    side = report.sides().get(name)
    if side is None:
        return "–"
    return f"{report.ratio(side):.3f} / {report.ratio(side, True):.3f} / {side.needed.fraction():.2f}"


def table(reports: list[ReplayReport], sides: tuple[str, ...], untimed: dict[str, ReplayReport]) -> str:
    """One row per session; `untimed`: the same sessions replayed without request times, by source."""
    head = ["session", "format", "req", "raw tokens (sum / peak)", "ctxmill tokens (sum / peak)",
            *[f"{name} modelled / effective / needed" for name in sides],
            *([f"{name}, no times" for name in SIDES[:2]] if untimed else []),
            "compactions raw→ctxmill", "retained (recoverable / visible last 10 turns)", "p50 / p95 ms"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in reports:
        ret = r.retention
        cells = [Path(r.source).name[:48], r.format, str(r.requests),
                 f"{r.raw.tokens_sum:,} / {r.raw.tokens_peak:,}",
                 f"{_pct(r.raw.tokens_sum, r.compressed.tokens_sum)} / {_pct(r.raw.tokens_peak, r.compressed.tokens_peak)}",
                 *[_side_cell(r, name) for name in sides],
                 *([_side_cell(untimed[r.source], name) for name in SIDES[:2]] if untimed else []),
                 f"{r.raw.compactions}→{r.compressed.compactions}",
                 f"{ret.fraction('recoverable'):.0%} / {ret.fraction('recent_visible', 'recent'):.0%}",
                 f"{r.ms_p50:.1f} / {r.ms_p95:.1f}"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def totals(reports: list[ReplayReport], label: str, sides: tuple[str, ...]) -> list[str]:
    """Sums of costs (not means of ratios) and needed lines over `reports`, per side."""
    rows = []
    for name in sides:
        if not reports or any(name not in r.sides() for r in reports):
            continue
        sc = score(reports, name)
        needed = sc.needed
        rows.append(f"| {label} ({len(reports)}) | {name} | {sc.modelled_ratio:.3f} | {sc.effective_ratio:.3f} | "
                    f"{needed.fraction():.3f} ({sum(needed.total.values()):,}) | "
                    + " | ".join(f"{needed.fraction(b):.3f}" for b in AGE_BUCKETS) + " |")
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


def _cells(sc: Score) -> str:
    return (f"{sc.modelled_ratio:.3f} / {sc.effective_ratio:.3f} / {sc.needed.fraction():.3f} "
            f"({sc.needed.fraction('11+'):.3f})")


def validation_lines(grid: Grid, shipped: str, label: str) -> list[str]:
    """Per point, per project and overall: in-sample beside leave-one-project-out, and the targets
    (`label`: which replay, with or without request times)."""
    v = validate(grid)
    lines = [f"### {label}", "", "Thresholds judged leave-one-project-out (`replay.loo`). Cells: modelled / effective / needed lines "
             "kept (needed from sources 11+ messages old). Grid, all sessions:", "",
             "| point | ctxmill | shipped |", "|---|---|---|"]
    lines += [f"| {name} | {_cells(score(reports.values()))} | {'yes' if name == shipped else ''} |"
              for name, reports in grid.items()]
    lines += ["", f"In-sample choice (on all projects): {v.in_sample}.", "",
              "| project | sessions | req | cap | in-sample | held-out choice | leave-one-project-out |",
              "|---|---|---|---|---|---|---|"]
    for project, members in sorted(v.projects.items()):
        ins = v.reports(grid, False, members)
        lines.append(f"| {project[:40]} | {len(members)} | {sum(r.requests for r in ins)} | {_cells(score(ins, 'cap'))} | "
                     f"{_cells(score(ins))} | {v.held_out[project]} | {_cells(score(v.reports(grid, True, members)))} |")
    ins, loo = v.reports(grid, False), v.reports(grid, True)
    lines += ["", "| all sessions | cap | in-sample | leave-one-project-out |", "|---|---|---|---|",
              f"| {len(ins)} | {_cells(score(ins, 'cap'))} | {_cells(score(ins))} | {_cells(score(loo))} |", ""]
    for judged, chosen in (("shipped", list(grid[shipped].values())), ("in-sample", ins), ("leave-one-project-out", loo)):
        misses = target_misses(chosen)
        lines.append(f"Targets missed, {label}, {judged}: {len(misses) or 'none'}")
        lines += [f"- {miss}" for miss in misses]
        lines.append("")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "replay.md")
    ap.add_argument("--headroom", type=Path, default=DEFAULT_PEER_PYTHON, help="python of headroom-ai's venv")
    ap.add_argument("--no-headroom", action="store_true")
    ap.add_argument("--grid", choices=("default", "small"), default="small",
                    help="thresholds to replay: the shipped ones only, or every combination of KNOBS")
    ap.add_argument("--times", choices=("both", "with", "without"), default="both",
                    help="replay with the recorded request times, without them, or both")
    ap.add_argument("--only", default="", help="replay only sessions whose file name matches this regex")
    args = ap.parse_args()
    folder = args.corpus / "transcripts"
    if not folder.is_dir():
        print(f"corpus not found at {folder}; nothing to replay", file=sys.stderr)
        return 0
    peer = None if args.no_headroom or not args.headroom.exists() else "headroom"
    sides = SIDES if peer else SIDES[:2]
    points, shipped = grid_points(args.grid)
    started = time.perf_counter()
    modes = {"both": (True, False), "with": (True,), "without": (False,)}[args.times]
    grids: dict[bool, dict[str, dict[str, ReplayReport]]] = {t: {point.name: {} for point in points} for t in modes}
    for path in session_files(folder):
        if args.only and not re.search(args.only, path.name):
            continue
        try:
            transcript = read_session(path)
        except UnknownFormat:
            continue
        for point, timed in itertools.product(points, modes):
            ours = point.name == shipped and timed
            worker = Headroom(args.headroom) if peer and ours else None
            try:
                report = replay(transcript, source=str(path), config=CompressConfig(stage_options=point.options),
                                peers={peer: worker} if worker else None, times=timed)
            finally:
                if worker:
                    worker.close()
            print(f"{path.name[:60]:60} {report.requests:4d} req  [{point.name}{'' if timed else ', no times'}]  "
                  + "  ".join(f"{name} {_side_cell(report, name)}" for name in sides if name in report.sides())
                  + f"  {report.seconds:.1f}s", file=sys.stderr)
            grids[timed][point.name][str(path)] = report
    grid = grids[modes[0]]
    untimed = grids[False][shipped] if len(modes) == 2 else {}
    reports = list(grid[shipped].values())
    stages = ", ".join(s.name for s in DEFAULT_STAGES)
    counter = reports[0].counter if reports else "?"
    big = [r for r in reports if r.requests >= 100]
    summary = ["| sessions | side | modelled | effective | needed lines kept (count) | " + " | ".join(AGE_BUCKETS) + " |",
               "|---|---|---|---|---|" + "---|" * len(AGE_BUCKETS),
               *[row for fmt in sorted({r.format for r in reports})
                 for row in totals([r for r in reports if r.format == fmt], fmt, sides)],
               *totals(big, "≥ 100 requests", sides), *totals(reports, "all", sides),
               *totals(list(untimed.values()), "all, no times", SIDES[:2])]
    text = "\n".join([
        f"Stages: {stages}. Tokens counted with {counter}; modelled cost per provider at the model's prices "
        f"(compress/model_prices.py; Anthropic: cache write 1.25x base input price, 2x for a 1-hour cache, read 0.1x "
        f"for the corpus's models, 20-block lookback; OpenAI: cached input at the model's discount, writes without "
        f"premium for the corpus's models); effective = modelled + re-reads of lines the agent later copied into "
        f"edits but could not see. "
        f"Host compactions start a new history (summary first). Cells: modelled / effective cost ratio (side / raw) / "
        f"needed lines kept.",
        "", table(reports, sides, untimed), "", "Totals (sums of costs, not means of ratios):", "", *summary,
        *usage_lines(reports),
        "", *[line for timed in modes for line in validation_lines(
            grids[timed], shipped, "with request times" if timed else "without request times")],
        "", f"Replayed in {time.perf_counter() - started:.0f} s.",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
