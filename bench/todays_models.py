"""The corpus's Claude Code and Codex sessions as if run on today's default models:
`python bench/todays_models.py [--corpus DIR]`.

Claude Code 2.1.332 runs Claude Opus 5.5 by default and Codex 0.171 runs GPT-6.2 Sol; the
corpus was recorded on older models. Their prices differ where the engine's decisions turn: Opus
5.5 reads its cache at 0.05 of the input price (older Claude models 0.1), GPT-6.2 Sol reads at 0.05
and writes at 1.25 (OpenAI's write premium from the GPT-5.6 family on; GPT-5.4 reads at 0.1 and
writes free). Their context windows differ too (1M and 500K). Each session is replayed
(`replay.runner.replay`, sums of costs, one run):

- as recorded;
- as on today's model, the engine deciding at that model's prices (`compress.model_prices`);
- as on today's model, the engine deciding at the recorded model's prices (what an engine that
  ignored the model's prices would do; everything else, the cost model included, is today's).

Only the model name changes; calls, outputs and times are the recorded ones (Codex's plain calls,
not code mode: `bench/codex_code_mode.py`). Besides the totals, each row gives its dearest
session at the end (modelled, of raw) and on the way (the highest share of raw's cost so far at
any request, `dearest_on_the_way`); after the table, every session that stood above raw on the way.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from unittest.mock import patch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import compress.runner.pipeline as pipeline  # noqa: E402
from compress.formats.sessions import UnknownFormat, read_session  # noqa: E402
from replay.loo import Score  # noqa: E402
from replay.runner import ReplayReport, replay  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
TODAYS = {"claude-code": "claude-opus-5-5", "codex": "gpt-6.2-sol"}
"""Each client's folder in the corpus -> the model the client runs by default today."""
LABELS = {"claude-code": "Claude Code", "codex": "Codex", "claude-opus-5-5": "Opus 5.5", "gpt-6.2-sol": "GPT-6.2 Sol"}
"""Folder and model names as docs/replay.md's table shows them."""


def engine_prices_as(model: str) -> contextlib.AbstractContextManager:
    """The engine prices its cache decisions as for `model`, whatever the request names."""
    life = pipeline.cache_life
    return patch.object(pipeline, "cache_life",
                        lambda provider, asked, configured="auto", _model="": life(provider, asked, configured, model))


def dearest_on_the_way(report: ReplayReport, side: str) -> tuple[float, int]:
    """The highest share of raw's modelled cost so far that `side` reaches at any request, and
    that request (1-based; the last of them on a tie)."""
    spent = raw = 0.0
    dearest = (0.0, 0)
    for request, (cost, raw_cost) in enumerate(zip(report.sides()[side].costs, report.raw.costs, strict=True), 1):
        spent += cost
        raw += raw_cost
        if raw:
            dearest = max(dearest, (spent / raw, request))
    return dearest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    print("| sessions | run as | engine decides at | side | modelled | effective | needed (11+) | dearest session "
          "| dearest on the way |\n|---|---|---|---|---|---|---|---|---|")
    above: list[str] = []
    for client, today in TODAYS.items():
        files = sorted((args.corpus / "transcripts" / client).glob("*.json*"))
        for run_as, engine in (("recorded", "recorded"), (today, today), (today, "recorded")):
            totals = {side: Score() for side in ("cap", "ctxmill")}
            dearest = dict.fromkeys(totals, 0.0)
            on_the_way = dict.fromkeys(totals, 0.0)
            for path in files:
                try:
                    transcript = read_session(path)
                except UnknownFormat:
                    continue
                recorded = str(transcript.head.get("model", ""))
                if run_as != "recorded":
                    transcript.head["model"] = run_as
                with engine_prices_as(recorded) if engine == "recorded" else contextlib.nullcontext():
                    report = replay(transcript, source=str(path))
                for side, total in totals.items():
                    total.add(report, side)
                    dearest[side] = max(dearest[side], report.ratio(report.sides()[side]))
                    peak, request = dearest_on_the_way(report, side)
                    on_the_way[side] = max(on_the_way[side], peak)
                    if side == "ctxmill" and peak > 1.0005:
                        above.append(f"{path.name}, run as {LABELS.get(run_as, run_as)}, engine at {engine}: {peak:.3f} "
                                     f"after request {request} of {report.requests}, "
                                     f"{report.ratio(report.compressed):.3f} at the end")
            for side, total in totals.items():
                if side == "cap" and engine != run_as:
                    continue  # the cap does not depend on the engine's prices
                decides_at = LABELS.get(engine, "recorded models'" if run_as != "recorded" else "recorded")
                print(f"| {LABELS[client]} ({total.sessions}) | {LABELS.get(run_as, run_as)} | {decides_at} | {side} | "
                      f"{total.modelled_ratio:.3f} | "
                      f"{total.effective_ratio:.3f} | {total.needed.fraction():.3f} ({total.needed.fraction('11+'):.3f}) | "
                      f"{dearest[side]:.3f} | {on_the_way[side]:.3f} |", flush=True)
    print("\nctxmill above raw on the way:" if above else "\nctxmill never above raw on the way")
    for line in above:
        print("- " + line)

if __name__ == "__main__":
    main()
