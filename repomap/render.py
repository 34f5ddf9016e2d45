"""The map's text: ranked files with their definitions, cut to a token budget.

Each file is its path, then one line per definition (its signature, indented by depth, with
its line number). A file is shown whole or with its first definitions (at least `MIN_DEFS`) and
a count of the rest; files are added in rank order until the next one does not fit. The budget is counted with the
same estimate as every other budget (`compress.tokens.estimate_tokens`).
"""

from __future__ import annotations

from typing import Callable

from compress.tokens import estimate_tokens
from repomap.outline import Outline

MAX_DEFS_PER_FILE = 30
MIN_DEFS = 3
MIN_FILE_TOKENS = 2
"""No file's entry costs less (its path and a line end), so a budget of B tokens names at most
B / MIN_FILE_TOKENS files."""


def file_lines(path: str, o: Outline, limit: int = MAX_DEFS_PER_FILE) -> list[str]:
    lines = [path + ":"]
    for d in o.defs[:limit]:
        lines.append(f"{'  ' * (d.depth + 1)}{d.signature}  :{d.line}")
    if len(o.defs) > limit:
        lines.append(f"  … {len(o.defs) - limit} more")
    return lines


def render(order: list[str], outline_of: Callable[[str], Outline], budget: int) -> tuple[str, list[str]]:
    """(text, the files it names) within `budget` tokens."""
    out: list[str] = []
    named: list[str] = []
    used = 0
    for path in order:
        o = outline_of(path)
        for limit in (MAX_DEFS_PER_FILE, 8, MIN_DEFS):
            block = "\n".join(file_lines(path, o, limit))
            cost = estimate_tokens(block) + 1
            if used + cost <= budget:
                break
        else:
            break
        out.append(block)
        named.append(path)
        used += cost
    return "\n".join(out), named
