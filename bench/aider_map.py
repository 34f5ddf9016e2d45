"""aider's RepoMap as a baseline for bench/repomap_corpus.py (run in a virtualenv with aider-chat).

Reads one job a line on stdin ({"root", "files", "prompt", "budget"}), writes one JSON object a
line: for each way of running aider below, the files it puts before the model. The prompt's
mentions are found as aider 0.86's coder finds them (`Coder.get_file_mentions`,
`get_ident_mentions`, `get_ident_filename_matches`, restated here from base_coder.py) and the
map is asked for as `Coder.get_repo_map` asks (mentioned files and identifiers, then its two
fallbacks: without chat files, then unhinted):
- "coder": what aider's coder does with a prompt: the files the prompt names
  (`get_file_mentions`) are added to the chat (`check_for_file_mentions`, the person answering
  yes), so they are before the model whole and count as named; the map is made of the other
  files, with mentioned_fnames (those files and the identifier/file-name matches) and
  mentioned_idents;
- "map": the map alone, no chat files, the same mentions, the same fallbacks;
- "before": the harness this bench used before (no chat files, no fallback, files read back
  from the map's text), kept to show what it missed.
The files a map names are those `RepoMap.to_tree` wrote into the text it returned (recorded as
it writes them, not parsed back), and only when their whole name is in that text (aider cuts
lines at 100 characters). Tokens are counted with ctxmill's estimate (PYTHONPATH must hold the
ctxmill checkout), so every map has the same budget in the same units; no context window is
given, so aider does not widen its map eightfold for an empty chat (the budget is the budget).
aider's order among files of equal rank follows the iteration order of a set of names, which
varies with the interpreter's hash seed: bench/repomap_corpus.py runs it with PYTHONHASHSEED=0.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

from aider.repomap import RepoMap

from compress.token_counters import estimate_tokens


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


class Recording(RepoMap):
    """aider's RepoMap, remembering which files each tree it writes holds."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.files_of: dict[str, list[str]] = {}

    def to_tree(self, tags, chat_rel_fnames):
        text = super().to_tree(tags, chat_rel_fnames)
        names = dict.fromkeys(t[0] for t in sorted(tags) if t[0] not in chat_rel_fnames)
        self.files_of[text] = list(names)
        return text

    def named(self, text: str | None) -> list[str]:
        if not text:
            return []
        lines = set(text.splitlines())
        return [f for f in self.files_of.get(text, []) if f in lines or f + ":" in lines]


def file_mentions(text: str, files: list[str]) -> set[str]:
    """`Coder.get_file_mentions` with an empty chat."""
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
    """`Coder.get_ident_filename_matches`."""
    by_stem = defaultdict(set)
    for rel in files:
        stem = Path(rel).stem.lower()
        if len(stem) >= 5:
            by_stem[stem].add(rel)
    return {f for ident in idents if len(ident) >= 5 for f in by_stem.get(ident.lower(), ())}


def coder_map(
    rm: Recording,
    root: str,
    files: list[str],
    chat: set[str],
    mentioned: set[str],
    idents: set[str],
) -> list[str]:
    """`Coder.get_repo_map` with `chat` in the chat: the files the map names."""
    absolute = {f: os.path.join(root, f) for f in files}
    chat_abs = {absolute[f] for f in chat}
    other = [absolute[f] for f in files if f not in chat]
    text = rm.get_repo_map(chat_abs, other, mentioned, idents)
    if not text:
        text = rm.get_repo_map(set(), list(absolute.values()), mentioned, idents)
    if not text:
        text = rm.get_repo_map(set(), list(absolute.values()))
    return rm.named(text)


def before(root: str, files: list[str], prompt: str, budget: int) -> list[str]:
    """What this harness did before: no chat files, no fallback, names parsed from the text."""
    rm = RepoMap(map_tokens=budget, root=root, main_model=Model(), io=Quiet())
    idents = set(re.split(r"\W+", prompt))
    mentioned = file_mentions(prompt, files) | ident_filename_matches(idents, files)
    text = rm.get_repo_map([], [os.path.join(root, f) for f in files], mentioned, idents) or ""
    known, out = set(files), []
    for line in text.splitlines():
        name = line.rstrip(":").strip()
        if name in known and name not in out and not line.startswith((" ", "│", "⋮")):
            out.append(name)
    return out


def named(job: dict) -> dict[str, list[str]]:
    root, files, prompt, budget = job["root"], job["files"], job["prompt"], job["budget"]
    idents = set(re.split(r"\W+", prompt))
    chat = file_mentions(prompt, files)
    mentioned = chat | ident_filename_matches(idents, files)
    out: dict[str, list[str]] = {}
    for name, in_chat in (("coder", chat), ("map", set())):
        try:
            rm = Recording(map_tokens=budget, root=root, main_model=Model(), io=Quiet())
            out[name] = sorted(in_chat) + coder_map(rm, root, files, in_chat, mentioned, idents)
        except Exception as exc:  # noqa: BLE001 - aider failing on a prompt names nothing
            print(f"aider_map {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            out[name] = sorted(in_chat)
    try:
        out["before"] = before(root, files, prompt, budget)
    except Exception as exc:  # noqa: BLE001
        print(f"aider_map before: {type(exc).__name__}: {exc}", file=sys.stderr)
        out["before"] = []
    return out


def main() -> None:
    for line in sys.stdin:
        print(json.dumps(named(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
