"""Per-stage time of a full (epoch) run, cold and warm, on a real session and a proxy-sized request.

    python bench/epoch_stages.py [--rounds 15]

Cold: the trim memo (`compress.stagekit.output_cut.TRIMMED`) is cleared before every run, as on
a proxy's first epoch of a session. Warm: it holds the previous run's results, as on later epochs
over the same history. Requests: the corpus session marot__spotter__8463c716 as one request with
tiers forced high (skipped without the corpus), and bench_proxy.py's ~0.68 MB conversation.
Prints the fastest round's total and the per-stage minimums in milliseconds (minimums: other
work on the machine only ever adds time).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_proxy import conversation  # noqa: E402

from ccr.store import CCRStore  # noqa: E402
from compress.config import CompressConfig  # noqa: E402
from compress.formats.sessions import read_session  # noqa: E402
from compress.runner.pipeline import run  # noqa: E402
from compress.stagekit.output_cut import TRIMMED  # noqa: E402
from compress.state.session import Session  # noqa: E402
from compress.tiers import TierThresholds  # noqa: E402
from ground.jsonbytes import dumps  # noqa: E402

CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
SESSION = CORPUS / "transcripts" / "claude-code" / "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"


def requests() -> list[tuple[str, dict, CompressConfig]]:
    out = []
    if SESSION.is_file():
        out.append(("real 163K-token session, tier high", read_session(SESSION).whole(),
                    CompressConfig(tiers=TierThresholds(1, 1))))
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": conversation(0, 150_000, 0)[0]}
    out.append(("bench_proxy conversation, default tiers", body, CompressConfig()))
    return out


def measure(body: dict, config: CompressConfig, rounds: int, cold: bool) -> tuple[float, dict[str, float]]:
    totals, stages = [], {}
    run(body, session=Session.memory(), store=CCRStore.in_memory(), config=config)
    for _ in range(rounds):
        if cold:
            TRIMMED.clear()
        report = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=config).report
        assert report.mode == "epoch" and not report.error, report.error
        totals.append(report.duration_ms)
        for name, ms in report.stage_ms.items():
            stages.setdefault(name, []).append(ms)
    return min(totals), {k: min(v) for k, v in stages.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    for label, body, config in requests():
        print(f"{label} ({len(dumps(body)) / 1e6:.2f} MB)")
        for cold in (True, False):
            total, stages = measure(body, config, args.rounds, cold)
            detail = ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
            print(f"  {'cold' if cold else 'warm'}: {total:.1f} ms ({detail})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
