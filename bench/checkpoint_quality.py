"""Checkpoint quality on the labelled corpus sessions: precision and recall per section.

    python bench/checkpoint_quality.py              # per-session table and the overall table
    python bench/checkpoint_quality.py --misses     # also list missed labels and unmatched items
    python bench/checkpoint_quality.py --json       # machine-readable totals (tests, README)
    python bench/checkpoint_quality.py --split      # totals of the sessions tuned on and of the held-out ones

For every session in bench/labels/checkpoint_labels.json it writes a checkpoint the product way
(`memory.checkpoint.checkpoint_file`, into a temporary project home, nothing offered to memory)
and scores the Markdown with bench/checkpoint_match.py. Precision: of the items a section shows,
the share matching a label; recall: of the required labels, the share some shown item matches.
Totals are micro-averaged (summed over sessions). Needs ../shared/corpus (CTXMILL_CORPUS).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.checkpoint_match import SECTIONS, Score, load_labels, parse, score, task_is_request  # noqa: E402

CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
TRANSCRIPTS = CORPUS / "transcripts"


def checkpoint_markdown(path: Path) -> str:
    """The checkpoint.md ctxmill writes for the session at `path` (nothing offered to memory)."""
    from memory.checkpoint import CheckpointConfig, checkpoint_file
    from memory.config import MemoryConfig

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / ".ctxmill"
        cfg = CheckpointConfig(MemoryConfig(home, Path(tmp) / "global"), home / "ccr")
        return checkpoint_file(cfg, path, offer=False).markdown


def evaluate(transcripts: Path = TRANSCRIPTS, labels: dict | None = None) -> dict:
    """{"sessions": {key: {section: Score}, ...}, "task_is_request": {key: bool}, "total": {section: Score}}."""
    labels = labels if labels is not None else load_labels()
    sessions, is_request = {}, {}
    total = {name: Score() for name in SECTIONS}
    for key, label in labels.items():
        parsed = parse(checkpoint_markdown(transcripts / key))
        scores = score(parsed, label)
        sessions[key] = scores
        is_request[key] = task_is_request(parsed, label)
        for name in SECTIONS:
            total[name].add(scores[name])
    return {"sessions": sessions, "task_is_request": is_request, "total": total}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _overall(total: dict[str, Score]) -> Score:
    all_ = Score()
    for s in total.values():
        all_.add(s)
    return all_


def totals_json(result: dict) -> dict:
    out = {name: {"precision": s.precision, "recall": s.recall, "shown": s.shown, "correct": s.correct,
                  "wanted": s.wanted, "found": s.found} for name, s in result["total"].items()}
    overall = _overall(result["total"])
    out["overall"] = {"precision": overall.precision, "recall": overall.recall, "shown": overall.shown,
                      "correct": overall.correct, "wanted": overall.wanted, "found": overall.found}
    return out


def _short(key: str) -> str:
    name = key.split("/", 1)[-1]
    return name if len(name) <= 34 else name[:31] + "…"


def report(result: dict, misses: bool = False) -> str:
    head = "| session | " + " | ".join(f"{n} P / R" for n in SECTIONS) + " | Task is the request |"
    lines = [head, "|" + "---|" * (len(SECTIONS) + 2)]
    for key, scores in result["sessions"].items():
        cells = [f"{_pct(scores[n].precision)} / {_pct(scores[n].recall)}" for n in SECTIONS]
        lines.append(f"| {_short(key)} | " + " | ".join(cells) + f" | {'yes' if result['task_is_request'][key] else 'NO'} |")
    lines += ["", "| section | precision | recall | shown (correct) | labels (found) |", "|---|---:|---:|---:|---:|"]
    for name, s in result["total"].items():
        lines.append(f"| {name} | {_pct(s.precision)} | {_pct(s.recall)} | {s.shown} ({s.correct}) | {s.wanted} ({s.found}) |")
    overall = _overall(result["total"])
    lines.append(f"| **overall** | {_pct(overall.precision)} | {_pct(overall.recall)} | {overall.shown} ({overall.correct}) "
                 f"| {overall.wanted} ({overall.found}) |")
    if misses:
        for key, scores in result["sessions"].items():
            lines += ["", f"## {key}"]
            for name in SECTIONS:
                for text in scores[name].misses:
                    lines.append(f"- {name} MISSED: {text}")
                for text in scores[name].wrong:
                    lines.append(f"- {name} WRONG: {' '.join(str(text).split())[:200]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the totals as JSON")
    parser.add_argument("--misses", action="store_true", help="list missed labels and unmatched items")
    parser.add_argument("--split", action="store_true",
                        help="totals of the sessions the extractors were tuned on and of the held-out ones")
    args = parser.parse_args(argv)
    if not TRANSCRIPTS.is_dir():
        print(f"corpus absent: {TRANSCRIPTS}", file=sys.stderr)
        return 2
    if args.split:
        labels = load_labels()
        for name, held in (("tuned on", False), ("held out", True)):
            subset = {k: v for k, v in labels.items() if bool(v.get("held_out")) is held}
            print(f"## {name} ({len(subset)} sessions)\n")
            print(report(evaluate(labels=subset)).split("\n\n")[1] + "\n")
        return 0
    result = evaluate()
    print(json.dumps(totals_json(result), indent=1) if args.json else report(result, args.misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
