"""The map's text: the best files with their definitions, then as many more paths as fit.

The first `OUTLINED` ranked files that define something are shown with their definitions (one
line each: the signature, indented by depth, with its line number; at most `OUTLINE_DEFS` a
file and a count of the rest), within `OUTLINE_SHARE` of the budget. Every other ranked file,
code or not, is then named by its path, in rank order, until the next does not fit; paths of
one folder share a line (`billing/: tax.py, models.py`), the folders in the order of their best
file. The budget is counted with the same estimate as every other budget
(`compress.token_counters.estimate_tokens`) on the text as written, header excluded.
"""

from __future__ import annotations

from collections.abc import Callable

from compress.token_counters import estimate_tokens
from repomap.outline import Outline

OUTLINED = 3
OUTLINE_DEFS = 8
OUTLINE_SHARE = 0.4
MIN_FILE_TOKENS = 2
"""No file's entry costs less (its name and a separator), so a budget of B tokens names at most
B / MIN_FILE_TOKENS files."""
OTHERS = "Other files, best first:"


def file_lines(path: str, o: Outline, limit: int = OUTLINE_DEFS) -> list[str]:
    lines = [path + ":"]
    for d in o.defs[:limit]:
        lines.append(f"{'  ' * (d.depth + 1)}{d.signature}  :{d.line}")
    if len(o.defs) > limit:
        lines.append(f"  … {len(o.defs) - limit} more")
    return lines


def path_lines(paths: list[str]) -> list[str]:
    """`paths` (in rank order) written one folder a line, folders in order of their best file."""
    groups: dict[str, list[str]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        groups.setdefault(folder, []).append(name)
    return [
        (f"{folder}/: " if folder else "") + ", ".join(names) for folder, names in groups.items()
    ]


def render(
    order: list[str], outline_of: Callable[[str], Outline], budget: int, outlined: int = OUTLINED
) -> tuple[str, list[str], int]:
    """(text, the files it names in rank order, how many of the first are outlined) within
    `budget` tokens."""
    blocks: list[str] = []
    named: list[str] = []
    used = 0
    for path in order[: outlined * 3]:
        if len(blocks) >= outlined:
            break
        o = outline_of(path)
        if not o.defs:
            continue
        for limit in (OUTLINE_DEFS, 3, 1):
            block = "\n".join(file_lines(path, o, limit))
            cost = estimate_tokens(block) + 1
            if used + cost <= budget * OUTLINE_SHARE:
                blocks.append(block)
                named.append(path)
                used += cost
                break
    shown = len(named)
    rest = [p for p in order if p not in set(named)]
    listed = _fit(rest, budget - used - (estimate_tokens(OTHERS) + 1 if blocks else 0))
    if listed:
        blocks.append("\n".join(([OTHERS] if named else []) + path_lines(listed)))
        named.extend(listed)
    return "\n".join(blocks), named, shown


def _fit(paths: list[str], budget: int) -> list[str]:
    """The longest head of `paths` whose `path_lines` fit `budget` tokens."""
    if budget <= 0 or not paths:
        return []
    low, high = 0, min(len(paths), budget // MIN_FILE_TOKENS + 1)
    while (
        low < high
    ):  # the cost grows with each path added, so the head that fits is found by halving
        mid = (low + high + 1) // 2
        if estimate_tokens("\n".join(path_lines(paths[:mid]))) + 1 <= budget:
            low = mid
        else:
            high = mid - 1
    return paths[:low]
