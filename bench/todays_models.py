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
not code mode: `bench/codex_code_mode.py`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import compress.pipeline as pipeline  # noqa: E402
from compress.formats.sessions import UnknownFormat, read_session  # noqa: E402
from replay.needed import Needed  # noqa: E402
from replay.runner import replay  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
TODAYS = {"claude-code": "claude-opus-5-5", "codex": "gpt-6.2-sol"}
"""Each client's folder in the corpus -> the model the client runs by default today."""


@contextlib.contextmanager
def engine_prices_as(model: str) -> Iterator[None]:
    """The engine prices its cache decisions as for `model`, whatever the request names."""
    saved = pipeline.cache_life
    pipeline.cache_life = lambda provider, asked, configured="auto", _model="": saved(provider, asked, configured, model)
    try:
        yield
    finally:
        pipeline.cache_life = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    print("| sessions | run as | engine prices | side | modelled | effective | needed (11+) | dearest session |\n"
          "|---|---|---|---|---|---|---|---|")
    for client, today in TODAYS.items():
        files = sorted((args.corpus / "transcripts" / client).glob("*.json*"))
        for run_as, engine in (("recorded", "recorded"), (today, today), (today, "recorded")):
            raw = 0.0
            totals = {side: [0.0, 0.0, Needed(), 0.0] for side in ("cap", "ctxmill")}
            sessions = 0
            for path in files:
                try:
                    transcript = read_session(path)
                except UnknownFormat:
                    continue
                recorded = str(transcript.head.get("model", ""))
                if run_as != "recorded":
                    transcript.head["model"] = run_as
                context = engine_prices_as(recorded) if engine == "recorded" else contextlib.nullcontext()
                with context:
                    report = replay(transcript, source=str(path))
                sessions += 1
                raw += report.raw.cost
                for side, total in totals.items():
                    stats = report.sides()[side]
                    total[0] += stats.cost
                    total[1] += stats.effective_cost
                    total[2].merge(stats.needed)
                    total[3] = max(total[3], stats.cost / max(report.raw.cost, 1e-9))
            for side, (cost, effective, needed, dearest) in totals.items():
                if side == "cap" and engine != run_as and run_as != "recorded":
                    continue  # the cap does not depend on the engine's prices
                print(f"| {client} ({sessions}) | {run_as} | {engine} | {side} | {cost / raw:.3f} | "
                      f"{effective / raw:.3f} | {needed.fraction():.3f} ({needed.fraction('11+'):.3f}) | "
                      f"{dearest:.3f} |", flush=True)


if __name__ == "__main__":
    main()
