"""What sealed session state costs: state.jsonl size, the time to seal and write it, and the time
a fresh process takes to open it from the next request.

Run: `python bench/session_at_rest.py [--repeat N]`. Requests: the ~200K-token corpus request of
bench/bench_pipeline_corpus.py (a generated one when ../shared/corpus is absent) and
fixtures/example-request.json, each compressed as one epoch at the high tier. "As sent" is
the size state.jsonl had when it held every rendering as sent (before sealing): the JSON of
the same records with the rendering itself in place of its sealed form.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import orjson  # noqa: E402
from bench_pipeline_corpus import _corpus_request, _generated_request  # noqa: E402

from ccr.store import CCRStore  # noqa: E402
from compress.config import CompressConfig  # noqa: E402
from compress.runner.pipeline import run  # noqa: E402
from compress.state.session import STATE_FILE, Session  # noqa: E402
from compress.tiers import TierThresholds  # noqa: E402
from ground.jsonbytes import dumps  # noqa: E402

HIGH = CompressConfig(tiers=TierThresholds(medium=1, high=2))


def measure(name: str, body: dict, repeat: int) -> None:
    best_save = best_open = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            session = Session.load(folder)
            result = run(body, session=session, store=CCRStore.in_memory(), config=HIGH)
            as_sent = sum(len(dumps({"h": h, "r": r.rendered, "rt": r.raw_tokens, "ot": r.out_tokens,
                                      "c": r.compressible, "s": r.settled})) + 1 for h, r in session.records.items())
            t0 = time.perf_counter()
            session.save()
            best_save = min(best_save, time.perf_counter() - t0)
            size = (folder / STATE_FILE).stat().st_size
            t0 = time.perf_counter()
            again = run(body, session=Session.load(folder), store=CCRStore.in_memory(), config=HIGH)
            best_open = min(best_open, time.perf_counter() - t0)
            assert dumps(again.body) == dumps(result.body) and again.report.frozen == len(body["messages"])
    print(f"{name}: {len(body['messages'])} messages, {result.report.tokens_before:,} tokens; state.jsonl "
          f"{size / 1024:,.0f} KiB sealed vs {as_sent / 1024:,.0f} KiB as sent; seal + write "
          f"{best_save * 1000:.1f} ms; next request from a fresh load (opens every record) "
          f"{best_open * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    measure("200K-token request", _corpus_request() or _generated_request(), args.repeat)
    measure("example request", orjson.loads((ROOT / "fixtures" / "example-request.json").read_bytes()), args.repeat)


if __name__ == "__main__":
    main()
