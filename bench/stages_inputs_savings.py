"""What dedup_tool_calls, purge_errors and supersede_inputs save on the claude-code sessions.

Each session of ../shared/corpus/transcripts/claude-code is compressed as one request (the whole
session) by the default chain at the medium tier (where all three stages run), with a fresh
session and an in-memory CCR store. Prints per-session tokens before -> after and per-stage
savings, and the share of all tokens held by write/edit/heredoc inputs (what supersede_inputs
can at most remove). Run: python bench/stages_inputs_savings.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.claude_code_requests import claude_code_sessions
from bench.claude_code_requests import session_request as load_request
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import from_provider
from compress.model import TOOL_USE
from compress.runner import pipeline
from compress.state.session import Session
from compress.tiers import TierThresholds
from compress.token_counters import estimate_tokens
from compress.vocab.calls import touched_files
from compress.vocab.touches import CHANGES
from ground.jsonbytes import dumps

STAGES = ("dedup_tool_calls", "purge_errors", "supersede_inputs")
CONFIG = CompressConfig(tiers=TierThresholds(medium=1, high=10**12))


def writing_input_tokens(body: dict) -> int:
    """Tokens in the inputs of calls that change files (the most supersede_inputs can note)."""
    total = 0
    for msg in from_provider(body).messages:
        for block in msg.blocks:
            if block.kind == TOOL_USE and any(t.action in CHANGES for t in touched_files(block.tool_name, block.input)):
                total += estimate_tokens(dumps(block.input).decode())
    return total


def main() -> int:
    sessions = claude_code_sessions()
    if not sessions:
        print("shared corpus absent (../shared/corpus or $CTXMILL_CORPUS)")
        return 1
    totals = {"before": 0, "after": 0, "writes": 0, **{s: 0 for s in STAGES}}
    print(f"| session | tokens before → after | {' | '.join(STAGES)} | write inputs | ms (3 stages) |")
    print("|---|---|" + "---|" * (len(STAGES) + 2))
    for path in sessions:
        body = load_request(path)
        report = pipeline.run(body, session=Session.memory(), store=CCRStore.in_memory(), config=CONFIG).report
        writes = writing_input_tokens(body)
        mine = sum(report.stages_saved.get(s, 0) for s in STAGES)
        totals["before"] += report.tokens_before
        totals["after"] += report.tokens_before - mine
        totals["writes"] += writes
        for s in STAGES:
            totals[s] += report.stages_saved.get(s, 0)
        cells = " | ".join(f"{report.stages_saved.get(s, 0):,}" for s in STAGES)
        ms = sum(report.stage_ms.get(s, 0.0) for s in STAGES)
        print(f"| {path.stem[:40]} | {report.tokens_before:,} → {report.tokens_before - mine:,} | {cells} | {writes:,} | {ms:.1f} |")
    before = totals["before"]
    cells = " | ".join(f"{totals[s]:,} ({100 * totals[s] / before:.1f}%)" for s in STAGES)
    print(f"| **all** | {before:,} → {totals['after']:,} (−{100 * (before - totals['after']) / before:.1f}%) | {cells} "
          f"| {totals['writes']:,} ({100 * totals['writes'] / before:.1f}%) | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
