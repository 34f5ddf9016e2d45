"""Latency of the memory tool's commands (ctxmill.anthropic_memory), printed as a markdown table.

    python bench/memory_tool.py [--others 0,1000,10000] [--files 20] [--runs 30]

Each command runs through `CtxmillMemoryTool.call` (the call the SDK's runner makes) on a MEMORY.md
holding `--files` memory files of about 1 KB and `--others` ordinary entries (every command reads
and parses the whole file; a change also writes it back, atomically and with fsync, and updates
the search index, which a search made before the calls opened). Medians and p90 over `--runs`
calls, in milliseconds. Needs the `anthropic` extra.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ctxmill.anthropic_memory import CtxmillMemoryTool  # noqa: E402
from ground.files import atomic_write  # noqa: E402
from memory import api  # noqa: E402
from memory.config import MemoryConfig  # noqa: E402
from memory.entry import Entry  # noqa: E402
from memory.markdown import parse  # noqa: E402


def seeded_tool(root: Path, others: int, files: int) -> CtxmillMemoryTool:
    cfg = MemoryConfig(project_home=root / "p", global_home=root / "g")
    doc = parse("")
    for n in range(others):
        doc.add(Entry(f"m-{n:08x}", "fact", f"Fact number {n}: the service on port {8000 + n % 1000} uses TLS.",
                      "2025-06-01"))
    atomic_write(cfg.project_home / api.MEMORY_FILE, doc.text().encode("utf-8"))
    tool = CtxmillMemoryTool(cfg)
    for n in range(files):
        tool.call({"command": "create", "path": f"/memories/topic{n}/notes.md",
                   "file_text": "\n".join(f"- finding {i} about topic {n}" for i in range(40))})
    api.search(cfg, "finding about topic")  # the index exists and is open, as after any search
    return tool


def timed(tool: CtxmillMemoryTool, calls: list[dict]) -> tuple[float, float]:
    took = []
    for call in calls:
        start = time.perf_counter()
        tool.call(call)
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    return statistics.median(took), took[int(len(took) * 0.9)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--others", default="0,1000,10000")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    path = "/memories/topic0/notes.md"
    commands = {
        "view /memories": lambda i: {"command": "view", "path": "/memories"},
        "view a file": lambda i: {"command": "view", "path": path},
        "create": lambda i: {"command": "create", "path": f"/memories/new/{i}.md", "file_text": "a new finding"},
        "str_replace": lambda i: {"command": "str_replace", "path": path, "old_str": f"finding {i} ",
                                  "new_str": f"finding {i}: checked "},
        "insert": lambda i: {"command": "insert", "path": path, "insert_line": 1, "insert_text": f"note {i}"},
        "rename": lambda i: {"command": "rename", "old_path": f"/memories/new/{i}.md", "new_path": f"/memories/old/{i}.md"},
        "delete": lambda i: {"command": "delete", "path": f"/memories/old/{i}.md"},
    }
    counts = [int(n) for n in args.others.split(",")]
    print(f"| command ({args.files} files of ~1 KB) | " + " | ".join(f"{n:,} other entries" for n in counts) + " |")
    print("|---|" + "---:|" * len(counts))
    rows: dict[str, list[str]] = {name: [] for name in commands}
    for others in counts:
        with tempfile.TemporaryDirectory() as root:
            tool = seeded_tool(Path(root), others, args.files)
            for name, make in commands.items():
                median, p90 = timed(tool, [make(i) for i in range(args.runs)])
                rows[name].append(f"{median:.2f} (p90 {p90:.2f})")
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
