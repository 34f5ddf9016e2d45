"""How often the repository map named the files the agent went on to read or edit, on the corpus.

    python bench/repomap_corpus.py [--corpus DIR] [--budget 512]

The corpus has transcripts, not repositories, so each Claude Code session's repository is
rebuilt from what the session shows: every file whose content a Read result or a Write body
holds (line numbers stripped; a file's first content seen). At each prompt a person typed, three
maps of that rebuilt repository are made with the same budget and the same renderer:
- ranked: ctxmill's ranking, given the prompt and the files the session touched before it;
- ranked, no recent: the prompt alone;
- by size: the largest files first (the naive baseline).
A prompt's targets are the files of the rebuilt repository that the agent read or edited after
that prompt and before the next one. Reported: the share of targets each map named (all prompts
pooled, and per project), and the mean tokens of the map. The rebuilt repository holds only files
the session saw, which favours every map alike; the ranking's weights were set before this bench
ran and were not tuned on it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.formats.sessions import read_session, session_files  # noqa: E402
from compress.line_numbers import unnumbered_lines  # noqa: E402
from compress.tokens import estimate_tokens  # noqa: E402
from compress.vocab.calls import touched_files  # noqa: E402
from repomap.index import RepoIndex  # noqa: E402
from repomap.rank import rank  # noqa: E402
from repomap.render import render  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
READS, WRITES = {"Read"}, {"Write"}
EDIT_NAMES = {"Read", "Edit", "MultiEdit", "Write", "NotebookEdit"}


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def events(messages: list[dict]) -> tuple[dict[str, str], list[tuple[str, object]]]:
    """(path -> first content seen, timeline of ("prompt", text) / ("touch", path))."""
    contents: dict[str, str] = {}
    timeline: list[tuple[str, object]] = []
    calls: dict[str, tuple[str, dict]] = {}
    for m in messages:
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, str):
            timeline.append(("prompt", content))
            continue
        for b in content if isinstance(content, list) else ():
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and m.get("role") == "user":
                timeline.append(("prompt", b.get("text", "")))
            elif b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
                name, tool_input = b.get("name", ""), b["input"]
                calls[b.get("id", "")] = (name, tool_input)
                for touch in touched_files(name, tool_input) if name in EDIT_NAMES else ():
                    timeline.append(("touch", touch.path))
                if name in WRITES and isinstance(tool_input.get("content"), str):
                    contents.setdefault(tool_input.get("file_path", ""), tool_input["content"])
            elif b.get("type") == "tool_result" and not b.get("is_error"):
                name, tool_input = calls.get(b.get("tool_use_id", ""), ("", {}))
                if name in READS and tool_input.get("file_path"):
                    contents.setdefault(tool_input["file_path"], "\n".join(unnumbered_lines(_text(b.get("content")))))
    return contents, timeline


def measure(path: Path, budget: int) -> dict[str, list[int]] | None:
    t = read_session(path)
    if t.format != "claude-code" or not t.calls:
        return None
    contents, timeline = events(t.request(len(t.calls) - 1)["messages"])
    contents = {p: c for p, c in contents.items() if p.startswith("/") and c.strip()}
    if len(contents) < 5:
        return None
    root = os.path.commonpath(list(contents))
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # named, targets, map tokens
    with tempfile.TemporaryDirectory() as tmp:
        for p, c in contents.items():
            target = Path(tmp) / os.path.relpath(p, root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(c)
        index = RepoIndex(None)
        files = index.refresh(Path(tmp))
        by_size = sorted(files, key=lambda f: (-len(contents.get(os.path.join(root, f), "")), f))
        recent: list[str] = []
        for i, (kind, value) in enumerate(timeline):
            if kind == "touch":
                rel = os.path.relpath(str(value), root)
                recent = [rel] + [r for r in recent if r != rel]
                continue
            later = []
            for k, v in timeline[i + 1:]:
                if k == "prompt":
                    break
                later.append(os.path.relpath(str(v), root))
            targets = {p for p in later if p in files}
            if not targets:
                continue
            for name, order in (("ranked", rank(index, files, str(value), recent)),
                                ("ranked, no recent", rank(index, files, str(value), [])),
                                ("by size", by_size)):
                text, named = render(order, index.outline, budget)
                cell = totals[name]
                cell[0] += len(targets & set(named))
                cell[1] += len(targets)
                cell[2] += estimate_tokens(text)
                cell.append(1)
        index.close()
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--budget", type=int, default=512)
    args = parser.parse_args()
    folder = args.corpus / "transcripts"
    if not folder.is_dir():
        sys.exit(f"corpus absent at {args.corpus}")
    pooled: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    per_project: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for path in session_files(folder):
        result = measure(path, args.budget)
        if not result:
            continue
        project = path.name.split("__")[0] + "__" + path.name.split("__")[1]
        for name, cell in result.items():
            prompts = len(cell) - 3
            for j, value in enumerate((cell[0], cell[1], cell[2], prompts)):
                pooled[name][j] += value
            per_project[project][name][0] += cell[0]
            per_project[project][name][1] += cell[1]
    print(f"budget {args.budget} tokens; {pooled['ranked'][3]} prompts with targets; "
          f"{len(per_project)} projects\n")
    print("| map | targets named | mean map tokens |\n|---|---:|---:|")
    for name, (named, targets, tokens, prompts) in pooled.items():
        print(f"| {name} | {named / targets:.3f} ({named}/{targets}) | {tokens / max(1, prompts):.0f} |")
    print("\n| project | ranked | ranked, no recent | by size |\n|---|---:|---:|---:|")
    for project, cells in sorted(per_project.items()):
        print(f"| {project} | " + " | ".join(f"{cells[n][0] / max(1, cells[n][1]):.2f}"
                                               for n in ("ranked", "ranked, no recent", "by size")) + " |")


if __name__ == "__main__":
    main()
