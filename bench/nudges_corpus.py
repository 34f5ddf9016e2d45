"""What the nudges stage sends on real sessions, and what it costs: `python bench/nudges_corpus.py
--only REGEX [--corpus DIR]`.

Replays each matching corpus session (as `bench/replay_corpus.py` does its shipped point), with
and without the recorded request times, and prints per session: ctxmill's modelled / effective
cost ratio against raw, its needed lines kept, the requests sent larger than raw (the
pipeline's own count, `tokens_after > tokens_before`), and the reminders sent and held back
(the runner's decisions). Run it on two checkouts to put them side by side; `--top N` lists
the sessions with the most reminders due (`compress.stages.nudges.nudge_text` for each
request, at the tier of its raw size), the ones to replay.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import replay.runner as replay_runner  # noqa: E402
from compress.config import CompressConfig  # noqa: E402
from compress.formats.requests import from_provider  # noqa: E402
from compress.formats.sessions import UnknownFormat, read_session, session_files  # noqa: E402
from compress.stages.nudges import Options, nudge_text  # noqa: E402
from compress.tiers import TierThresholds  # noqa: E402
from compress.token_counters import estimate_tokens  # noqa: E402
from ground.jsonbytes import dumps  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))


def reminders_due(path: Path) -> int:
    """Requests of a session whose newest message is due a reminder at the tier of its raw size
    (`nudge_text`; whether it is sent depends on what the pipeline saves)."""
    transcript = read_session(path)
    thresholds = TierThresholds()
    due = 0
    for history in transcript.segments():
        for call in (c for c in history.calls if c.index > 0):
            body = history.whole(call.index)
            tier = thresholds.tier_for(estimate_tokens(dumps(body).decode()))
            due += bool(nudge_text(list(from_provider(body).messages), tier, Options()))
    return due


PIPELINE_RUN = replay_runner.run


def counting_run(counts: Counter):
    """`compress.runner.pipeline.run` as the replay calls it, counting what each request's report says."""
    def run(*args, **kwargs):
        result = PIPELINE_RUN(*args, **kwargs)
        rep = result.report
        decided = [d for _, stage, d in rep.decisions if stage == "nudges"]
        counts["sent"] += any(d.startswith("appended") for d in decided)
        counts["held"] += any(d.startswith("held") for d in decided)
        counts["above raw"] += rep.tokens_after > rep.tokens_before
        return result
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--only", default="", help="replay sessions whose file name matches this regex")
    ap.add_argument("--top", type=int, default=0, help="list the N sessions with the most reminders due, replay none")
    args = ap.parse_args()
    files = []
    for path in session_files(args.corpus / "transcripts"):
        if args.only and not re.search(args.only, path.name):
            continue
        try:
            files.append((path, reminders_due(path) if args.top else 0))
        except UnknownFormat:
            continue
    if args.top:
        for path, due in sorted(files, key=lambda f: -f[1])[:args.top]:
            print(f"{due:3d}  {path.name}")
        return 0
    from replay_corpus import grid_points

    points, shipped = grid_points("default")
    options = next(p.options for p in points if p.name == shipped)
    print("| session | req | times | modelled | effective | needed (kept/total) | above raw | reminders sent / held |")
    print("|---|---|---|---|---|---|---|---|")
    for path, _ in files:
        transcript = read_session(path)
        for timed in (True, False):
            counts: Counter = Counter()
            replay_runner.run = counting_run(counts)
            try:
                report = replay_runner.replay(transcript, source=str(path), config=CompressConfig(stage_options=options),
                                              times=timed)
            finally:
                replay_runner.run = PIPELINE_RUN
            side = report.compressed
            kept, total = sum(side.needed.kept.values()), sum(side.needed.total.values())
            print(f"| {path.name[:48]} | {report.requests} | {'with' if timed else 'without'} | "
                  f"{report.ratio(side):.3f} | {report.ratio(side, True):.3f} | {side.needed.fraction():.3f} "
                  f"({kept}/{total}) | {counts['above raw']} | {counts['sent']} / {counts['held']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
