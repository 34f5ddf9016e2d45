"""Leave-one-project-out for `CompressConfig.epoch_horizon` (1.0, 0.5, 0.25), the stage thresholds as shipped.

    python bench/loo_horizon.py [--corpus DIR]

`bench/replay_corpus.py`'s grid varies stage options; the horizon (how many turns ahead an epoch's
cache rewrite must pay back, as a share of the turns so far) is a config field, judged here the
same way (`replay.loo`): every session replayed with each value, the value chosen on the other
projects, scored on the one left out.
"""
import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from compress.config import CompressConfig  # noqa: E402
from compress.formats.sessions import UnknownFormat, read_session, session_files  # noqa: E402
from replay.loo import score, validate  # noqa: E402
from replay.runner import replay  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--corpus", type=Path, default=Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus")))
args = ap.parse_args()
VALUES = (1.0, 0.5, 0.25)
grid = {f"horizon {h}": {} for h in VALUES}
for path in session_files(args.corpus / "transcripts"):
    try:
        t = read_session(path)
    except UnknownFormat:
        continue
    for h in VALUES:
        grid[f"horizon {h}"][str(path)] = replay(t, source=str(path), config=replace(CompressConfig(), epoch_horizon=h))
v = validate(grid)
def cells(s):
    return f"{s.modelled_ratio:.3f} / {s.effective_ratio:.3f} / {s.needed.fraction():.3f}"
for name, reports in grid.items():
    print(name, cells(score(reports.values())), "max modelled", max(round(r.ratio(r.sides()['ctxmill']), 3) for r in reports.values()))
print("in-sample choice:", v.in_sample, cells(score(v.reports(grid, False))))
print("leave-one-project-out:", cells(score(v.reports(grid, True))))
print("held-out choices:", {n: list(v.held_out.values()).count(n) for n in grid})
