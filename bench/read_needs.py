"""Which file reads agents later copy edits from: `python bench/read_needs.py [--corpus DIR]`.

For every file read in every corpus session: its size, its file type (`compress.vocab.files`),
whether the agent edits that file later, and whether any line (stripped, >= 12 characters) of a
later edit's old text, more than 3 messages on, occurs in it ("needed later"). Prints, per group,
reads, characters, and the share of reads (and of their characters) needed later. This is what
the read budgets of `trim_outputs` are chosen from (docs/replay.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.formats.requests import SHAPES  # noqa: E402
from compress.formats.sessions import UnknownFormat, read_session, session_files  # noqa: E402
from compress.model import TOOL_RESULT, TOOL_USE  # noqa: E402
from compress.vocab.calls import copied_texts, touched_files  # noqa: E402
from compress.vocab.files import is_prose, is_source  # noqa: E402
from compress.vocab.tools import ToolKind, tool_kind  # noqa: E402
from replay.needed import MIN_LINE_CHARS  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))


def _path(name: str, tool_input: object) -> str:
    return next((t.path for t in touched_files(name, tool_input)), "")


def session_reads(path: Path) -> list[tuple[list[str], int, bool]]:
    """(groups, characters, needed later) of every file read of one session."""
    transcript = read_session(path)
    parse = SHAPES[transcript.provider].parse_message
    messages = [parse(m) for m in transcript.messages]
    calls: dict[str, tuple[str, object]] = {}
    reads, edits = [], []
    for i, msg in enumerate(messages):
        for block in msg.blocks:
            if block.kind == TOOL_USE:
                calls[block.tool_id] = (block.tool_name, block.input)
                lines = [x.strip() for text in copied_texts(block.tool_name, block.input) for x in text.splitlines()
                         if len(x.strip()) >= MIN_LINE_CHARS]
                if lines:
                    edits.append((i, _path(block.tool_name, block.input), lines))
            elif block.kind == TOOL_RESULT:
                name, tool_input = calls.get(block.tool_id, ("", None))
                if tool_kind(name, tool_input) is ToolKind.FILE_READ:
                    reads.append((i, _path(name, tool_input), block.result_text))
    out = []
    for i, file, text in reads:
        needed = any(j > i + 3 and any(x in text for x in lines) for j, _, lines in edits)
        edited = any(j > i and p == file for j, p, _ in edits)
        kind = "source" if is_source(file) else "prose" if is_prose(file) else "other"
        size = "< 3K" if len(text) < 3_000 else "< 10K" if len(text) < 10_000 else ">= 10K"
        out.append((["all", f"type {kind}", f"edited later: {'yes' if edited else 'no'}", f"size {size}"],
                    len(text), needed))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = ap.parse_args()
    folder = args.corpus / "transcripts"
    if not folder.is_dir():
        print(f"corpus not found at {folder}", file=sys.stderr)
        return 0
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for path in session_files(folder):
        try:
            reads = session_reads(path)
        except UnknownFormat:
            continue
        for groups, chars, needed in reads:
            for group in groups:
                t = totals[group]
                t[0] += 1
                t[1] += chars
                t[2] += needed
                t[3] += chars if needed else 0
    print("| reads | count | characters | needed later (reads) | needed later (characters) |\n|---|---:|---:|---:|---:|")
    for group, (n, chars, needed, needed_chars) in sorted(totals.items()):
        print(f"| {group} | {n:,} | {chars:,} | {needed / n:.0%} | {needed_chars / max(chars, 1):.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
