"""aider's RepoMap as a baseline for bench/repomap_corpus.py; runs in a virtual environment with aider-chat.

Reads one job a line on stdin ({"root", "files", "prompt", "budget"}), writes the files aider's
map names as one JSON list a line. The map is aider's `RepoMap.get_repo_map` with no chat
files, every file of the repository as the other files, and the prompt's mentioned files and
identifiers found as aider's coder finds them (`get_file_mentions`, `get_ident_mentions`,
`get_ident_filename_matches`, restated here from aider 0.86's base_coder.py). Tokens are
counted with ctxmill's estimate (PYTHONPATH must hold the ctxmill checkout), so both maps have
the same budget in the same units; no context window is given, so aider does not widen its map
for an empty chat.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

from aider.repomap import RepoMap

from compress.tokens import estimate_tokens


class Model:
    def token_count(self, text: str) -> int:
        return estimate_tokens(text)


class Quiet:
    def tool_output(self, *args, **kwargs) -> None:
        pass

    tool_warning = tool_error = tool_output

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None


def file_mentions(text: str, files: list[str]) -> set[str]:
    words = {w.rstrip(",.!;:?").strip("\"'`*_") for w in text.split()}
    normalized = {w.replace("\\", "/") for w in words}
    found, by_base = set(), defaultdict(list)
    for rel in files:
        if rel.replace("\\", "/") in normalized:
            found.add(rel)
        base = os.path.basename(rel)
        if any(c in base for c in "/\\._-"):
            by_base[base].append(rel)
    found.update(rels[0] for base, rels in by_base.items() if len(rels) == 1 and base in words)
    return found


def ident_filename_matches(idents: set[str], files: list[str]) -> set[str]:
    by_stem = defaultdict(set)
    for rel in files:
        stem = Path(rel).stem.lower()
        if len(stem) >= 5:
            by_stem[stem].add(rel)
    return {f for ident in idents if len(ident) >= 5 for f in by_stem.get(ident.lower(), ())}


def named(job: dict) -> list[str]:
    root, files, prompt = job["root"], job["files"], job["prompt"]
    rm = RepoMap(map_tokens=job["budget"], root=root, main_model=Model(), io=Quiet())
    idents = set(re.split(r"\W+", prompt))
    mentioned = file_mentions(prompt, files) | ident_filename_matches(idents, files)
    text = rm.get_repo_map([], [os.path.join(root, f) for f in files], mentioned, idents) or ""
    known = set(files)
    out = []
    for line in text.splitlines():
        name = line.rstrip(":").strip()
        if name in known and name not in out and not line.startswith((" ", "│", "⋮")):
            out.append(name)
    return out


def main() -> None:
    for line in sys.stdin:
        try:
            result = named(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - one job's failure is one empty map
            print(f"aider_map: {type(exc).__name__}: {exc}", file=sys.stderr)
            result = []
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
