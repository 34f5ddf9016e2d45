"""How far the tier's token count is from the provider's, per recorded session.

    python bench/calibrate_usage.py [--corpus DIR] [--min-tokens 50000] [--min-calls 10]

For every model call whose recorded usage reports at least `--min-tokens` prompt tokens (calls
the host sent as replayed: each compaction starts a new history), two ratios to the reported
count, as medians (and 90th percentiles) per session:
- the pipeline's raw estimate (`estimate_tokens` over the request's head and every message, what
  decides the tier when nobody tells the pipeline the provider's count);
- the replay's calibrated count (`replay.usage.ReportedSize`: the previous call's reported count
  plus what the request grew by, at the exact o200k count the replay prices with), which the
  replay passes to the pipeline as a live proxy passes its calibrated one.
The recordings lack the host's system prompt and tools, which the reported count includes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from token_corpus import corpus_dir, transcript_files

from compress.formats.requests import SHAPES, detect, from_provider
from compress.formats.sessions import UnknownFormat, read_session
from compress.formats.sessions.transcript import Transcript
from compress.runner.message_tokens import MessageTokens
from compress.token_counters import estimate_tokens, get_counter
from replay.costmodel import prices_for
from replay.pricing import RequestAccountant
from replay.usage import ReportedSize


def ratios(transcript: Transcript, min_tokens: int) -> tuple[list[float], list[float]]:
    """(raw estimate / reported, calibrated / reported) of the calls reporting >= `min_tokens`."""
    estimate = MessageTokens(estimate_tokens)
    exact = RequestAccountant(transcript.provider, get_counter(prefer_exact=True), {},
                              prices_for(transcript.provider, str(transcript.head.get("model", ""))))
    size, raw, calibrated = ReportedSize(), [], []
    for history in transcript.segments():
        for call in (c for c in history.calls if c.index > 0):
            body = history.whole(call.index)
            tokens = exact.add(body, None).tokens
            guess = size.next(tokens)
            reported = call.usage.prompt_total if call.usage is not None else 0
            if reported >= min_tokens:
                shape = SHAPES[detect(body)]
                messages = from_provider(body).messages
                raw.append((estimate.head(body, shape.HEAD_FIELDS) + sum(map(estimate.message, messages))) / reported)
                if guess is not None:
                    calibrated.append(guess / reported)
            size.saw(tokens, call.usage)
    return raw, calibrated


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} / {sorted(values)[int(0.9 * len(values))]:.3f}" if values else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--min-tokens", type=int, default=50_000)
    parser.add_argument("--min-calls", type=int, default=10)
    args = parser.parse_args()
    root = args.corpus or corpus_dir()
    if root is None:
        print("shared corpus not found (../shared/corpus or $CTXMILL_CORPUS)", file=sys.stderr)
        return 1
    print("| session | format | calls | raw estimate / reported (median / p90) | calibrated / reported (median / p90) |")
    print("|---|---|---:|---:|---:|")
    for path in transcript_files(root):
        try:
            transcript = read_session(path)
        except UnknownFormat:
            continue
        raw, calibrated = ratios(transcript, args.min_tokens)
        if len(raw) >= args.min_calls:
            print(f"| {path.stem[:50]} | {transcript.format} | {len(raw)} | {_cell(raw)} | {_cell(calibrated)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
