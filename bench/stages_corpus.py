"""Savings of the default chain on the corpus's Claude Code sessions, each taken whole as one
request, at a forced tier: `python bench/stages_corpus.py [always|medium|high] [--all]`
(`--all`: every transcript of the corpus, in every format, not only the Claude Code ones).

Prints tokens before → after per session and per stage, and checks retention: the first error
line of every failed tool result is still visible (or its marker resolves to the original).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from claude_code_requests import claude_code_sessions
from token_corpus import corpus_dir

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import from_provider
from compress.formats.sessions import read_session, session_files
from compress.model import TOOL_RESULT
from compress.runner.pipeline import run
from compress.state.session import Session
from compress.tiers import TierThresholds
from compress.vocab.signals.errors import first_error_line, is_failed_result

TIERS = {"always": TierThresholds(10**9, 10**9), "medium": TierThresholds(1, 10**9), "high": TierThresholds(1, 1)}


def results(body: dict) -> dict[str, tuple[str, bool]]:
    """tool id -> (result text, failed) for every tool result of a request, in any provider shape."""
    return {b.tool_id: (b.result_text, is_failed_result(b))
            for m in from_provider(body).messages for b in m.blocks if b.kind == TOOL_RESULT}


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    tier = args[0] if args else "always"
    root = corpus_dir()
    if root is None:
        print("shared corpus absent")
        return 1
    before_total = after_total = failed = visible = recoverable = 0
    per_stage: dict[str, int] = {}
    paths = session_files(root / "transcripts") if "--all" in sys.argv else claude_code_sessions(root)
    for path in paths:
        body = read_session(path).whole()
        store = CCRStore.in_memory()
        report = run(body, session=Session.memory(), store=store, config=CompressConfig(tiers=TIERS[tier]))
        result = report.body
        report = report.report
        before_total += report.tokens_before
        after_total += report.tokens_after
        for name, saved in report.stages_saved.items():
            per_stage[name] = per_stage.get(name, 0) + saved
        new = results(result)
        for tid, (text, is_error) in results(body).items():
            if not is_error:
                continue
            failed += 1
            line = first_error_line(text) or text.strip().split("\n")[0]
            if line in new[tid][0]:
                visible += 1
            elif any(store.get(m.key).text == text for m in find_markers(new[tid][0])):
                recoverable += 1
        pct = 100 * (1 - report.tokens_after / max(1, report.tokens_before))
        print(f"{path.parent.name + '/' + path.name[:40]:52s} {report.tokens_before:>9,} → {report.tokens_after:>9,}  -{pct:4.1f}%")
    print(f"total {before_total:,} → {after_total:,}  -{100 * (1 - after_total / before_total):.1f}% at tier {tier}")
    print("per stage:", ", ".join(f"{k} -{v:,}" for k, v in per_stage.items()))
    print(f"failed results {failed}: first error line visible {visible}, recoverable {recoverable}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
