"""Replay every session of the shared corpus and write a markdown table.

    python bench/replay_corpus.py [--corpus DIR] [--out bench/results/replay.md]
                                  [--headroom /tmp/peer-headroom/bin/python] [--no-headroom]

Uses whatever `compress.pipeline.DEFAULT_STAGES` holds, the exact o200k counter and the cost
model of `compress.replay.costmodel`, so re-running it after stages change refreshes the numbers.
The headroom-ai column (its model-free `compress()` applied to every request, priced with the
same counter and cost model in the same run) appears when headroom-ai is installed in a
separate venv (`python3 -m venv /tmp/peer-headroom && /tmp/peer-headroom/bin/pip install
headroom-ai`); otherwise it is left out. The corpus is ../shared/corpus (or $CTXMILL_CORPUS).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.formats.sessions import UnknownFormat, read_session, session_files  # noqa: E402
from compress.pipeline import DEFAULT_STAGES  # noqa: E402
from compress.replay.runner import ReplayReport, replay  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
DEFAULT_PEER_PYTHON = Path("/tmp/peer-headroom/bin/python")
PEERS_DIR = ROOT.parent / "shared" / "peers"


class Headroom:
    """headroom.compress() in its own venv, one long-lived subprocess, one request per line."""

    def __init__(self, python: Path) -> None:
        self.proc = subprocess.Popen([str(python), str(ROOT / "bench" / "headroom_worker.py"), str(PEERS_DIR)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, encoding="utf-8")

    def __call__(self, body: dict) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(body["messages"], ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        return {**body, "messages": json.loads(self.proc.stdout.readline())}

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _pct(raw: int, out: int) -> str:
    return f"{100.0 * (out - raw) / raw:+.1f}%" if raw else "n/a"


def table(reports: list[ReplayReport], peer: str | None) -> str:
    head = ["session", "format", "req", "raw tokens (sum / peak)", "compressed (sum / peak)", "cost ratio"]
    if peer:
        head.append(f"{peer} cost ratio")
    head += ["compactions raw→ctxmill", "retained (recoverable / visible last 10 turns)", "p50 / p95 ms"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in reports:
        ret = r.retention
        cells = [Path(r.source).name[:48], r.format, str(r.requests),
                 f"{r.raw.tokens_sum:,} / {r.raw.tokens_peak:,}",
                 f"{_pct(r.raw.tokens_sum, r.compressed.tokens_sum)} / {_pct(r.raw.tokens_peak, r.compressed.tokens_peak)}",
                 f"{r.cost_ratio:.3f}"]
        if peer:
            cells.append(f"{r.ratio(r.peers[peer]):.3f}" if peer in r.peers else "–")
        cells += [f"{r.raw.compactions}→{r.compressed.compactions}",
                  f"{ret.fraction('recoverable'):.0%} / {ret.fraction('recent_visible', 'recent'):.0%}",
                  f"{r.ms_p50:.1f} / {r.ms_p95:.1f}"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def overall(reports: list[ReplayReport], fmt: str | None, peer: str | None) -> str:
    chosen = [r for r in reports if fmt is None or r.format == fmt]
    raw = sum(r.raw.cost for r in chosen)
    if not raw:
        return ""
    line = f"{fmt or 'all'} ({len(chosen)} sessions): cost ratio {sum(r.compressed.cost for r in chosen) / raw:.3f}"
    if peer and all(peer in r.peers for r in chosen):
        line += f", {peer} {sum(r.peers[peer].cost for r in chosen) / raw:.3f}"
    return line


def usage_lines(reports: list[ReplayReport]) -> list[str]:
    out = []
    for r in reports:
        if r.usage and r.usage.compared >= 5:
            u = r.usage
            out.append(f"| {Path(r.source).name[:48]} | {u.compared} | {u.cost_ratio:.3f} | {u.median_abs_error:.1%} | "
                       f"{u.modelled_read_share:.1%} / {u.reported_read_share:.1%} |")
    if not out:
        return []
    return ["", "Cost model vs provider-reported usage (raw replay, calls before any host compaction):", "",
            "| session | calls | modelled / reported cost | median input error | cache-read share modelled / reported |",
            "|---|---|---|---|---|", *out]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "replay.md")
    ap.add_argument("--headroom", type=Path, default=DEFAULT_PEER_PYTHON, help="python of headroom-ai's venv")
    ap.add_argument("--no-headroom", action="store_true")
    args = ap.parse_args()
    folder = args.corpus / "transcripts"
    if not folder.is_dir():
        print(f"corpus not found at {folder}; nothing to replay", file=sys.stderr)
        return 0
    peer = None if args.no_headroom or not args.headroom.exists() else "headroom"
    started = time.perf_counter()
    reports = []
    for path in session_files(folder):
        try:
            transcript = read_session(path)
        except UnknownFormat:
            continue
        worker = Headroom(args.headroom) if peer else None
        try:
            report = replay(transcript, source=str(path), peers={peer: worker} if worker else None)
        finally:
            if worker:
                worker.close()
        print(f"{path.name[:60]:60} {report.requests:4d} req  ratio {report.cost_ratio:.3f}  {report.seconds:.1f}s",
              file=sys.stderr)
        reports.append(report)
    stages = ", ".join(s.name for s in DEFAULT_STAGES)
    counter = reports[0].counter if reports else "?"
    summary = [line for line in (overall(reports, "claude-code", peer), overall(reports, None, peer)) if line]
    text = "\n".join([
        f"Stages: {stages}. Tokens counted with {counter}; cost = cache read 0.1x + write 1.25x base input "
        f"price (block-prefix model, 20-block lookback). Ratio = compressed / raw; below 1 saves money.",
        "", table(reports, peer), "", *[f"- {line}" for line in summary], *usage_lines(reports),
        "", f"Replayed in {time.perf_counter() - started:.0f} s.",
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
