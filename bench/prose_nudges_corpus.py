"""compress_prose and nudges on the shared corpus: prose condensed, nudges given per session.

    python bench/prose_nudges_corpus.py

Per Claude Code session at its peak (whole session as one request, medium tier forced so the
medium stages run): long assistant texts, how many were condensed, their tokens before ->
after, the pipeline's compress_prose saving, and how many memory reminders a turn-by-turn
replay gives. Plus the Chinese craft-zh session's long assistant texts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from claude_code_requests import claude_code_sessions, session_request
from token_corpus import corpus_dir

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import from_provider
from compress.runner.pipeline import run
from compress.stagekit.stage import PendingOriginals, StageContext
from compress.stages.compress_prose import MIN_CHARS, shorten
from compress.stages.nudges import Options, memory_nudges
from compress.state.session import Session
from compress.tiers import Tier, TierThresholds
from compress.token_counters import estimate_tokens

MEDIUM = CompressConfig(tiers=TierThresholds(medium=1, high=10**9))


def prose_stats(texts: list[str]) -> tuple[int, int, int, int]:
    """(long texts, condensed, tokens before, tokens after) over the texts longer than MIN_CHARS."""
    long = [t for t in texts if len(t) > MIN_CHARS]
    ctx = StageContext(CompressConfig(), Tier.MEDIUM, 0, (True,), PendingOriginals(), estimate_tokens)
    outs = [shorten(t, ctx) for t in long]
    return (len(long), sum(o is not t for o, t in zip(outs, long)),
            sum(map(estimate_tokens, long)), sum(map(estimate_tokens, outs)))


def craft_zh_texts(root: Path) -> list[str]:
    texts = []
    for path in sorted((root / "transcripts" / "craft-zh").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            if item.get("type") == "assistant" and isinstance(item.get("content"), str):
                texts.append(item["content"])
    return texts


def main() -> int:
    root = corpus_dir()
    if root is None:
        print("shared corpus absent (../shared/corpus or $CTXMILL_CORPUS)")
        return 1
    print("| session | messages | tokens | long assistant texts | condensed | their tokens before → after "
          "| compress_prose in pipeline | memory nudges |")
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    for path in claude_code_sessions(root):
        body = session_request(path)
        messages = list(from_provider(body).messages)
        texts = [b.text for m in messages if m.role == "assistant" for b in m.blocks if b.kind == "text"]
        n, done, before, after = prose_stats(texts)
        report = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=MEDIUM).report
        nudges = len(memory_nudges(messages, Options()))
        print(f"| {path.stem[:32]} | {len(messages)} | {report.tokens_before:,} | {n} | {done} | {before:,} → {after:,} "
              f"| {report.stages_saved.get('compress_prose', 0):,} | {nudges} |")
    n, done, before, after = prose_stats(craft_zh_texts(root))
    print(f"\ncraft-zh (Chinese): {n} long assistant texts, {done} condensed, {before:,} → {after:,} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
