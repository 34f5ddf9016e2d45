"""The memory injected at session start, within a budget (`MemoryConfig.inject_chars`).

`select(cfg, today)` -> Injection. What must hold:
- candidates are the entries of the project's and the global MEMORY.md, one line each (`line`);
  notes.md (not yet consolidated) is searchable only;
- pinned entries are always injected, in file order, even past the budget (never dropped);
- the other entries are ranked, most useful first: their uses (memory.usage) weighted by how
  recent the last one was, `count * 0.5 ** (days since it / USE_HALF_LIFE_DAYS)`; ties go to the
  later last use, then the newer entry, then file order. They are taken in that order while
  their lines fit in what the pinned ones left of the budget; the rest stay searchable
  (`memory_search`) but are not injected;
- deterministic: the same files, uses and day give the same lines in the same order (the
  session's cached prefix stays the same).
"""

from __future__ import annotations

from datetime import date
from functools import cache

from ground.records import Record
from memory import api, usage
from memory.config import MemoryConfig
from memory.entry import Entry

USE_HALF_LIFE_DAYS = 30.0


def line(entry: Entry) -> str:
    """An entry as one injected line."""
    return f"- [{entry.type}] " + " ".join(entry.text.split())


class Injection(Record):
    lines: tuple[str, ...]  # pinned first, then the ranked ones that fit
    pinned: int  # how many of the lines are pinned entries
    entries: int  # entries in MEMORY.md (project and global)
    chars: int  # characters of the lines, a newline after each
    budget: int

    @property
    def left_out(self) -> int:
        return self.entries - len(self.lines)


def select(cfg: MemoryConfig, today: date | None = None) -> Injection:
    """What to inject (see the module docstring)."""
    today = today or date.today()
    entries = [e for e in api.list_entries(cfg) if e.file.endswith(api.MEMORY_FILE)]
    pinned = [e for e in entries if e.pinned]
    lines = [line(e) for e in pinned]
    used = sum(len(text) + 1 for text in lines)
    uses = usage.load(cfg)
    others = [(n, e) for n, e in enumerate(entries) if not e.pinned]
    for _, entry in sorted(others, key=lambda ne: _rank(ne[1], ne[0], uses, today)):
        text = line(entry)
        if used + len(text) + 1 <= cfg.inject_chars:
            lines.append(text)
            used += len(text) + 1
    return Injection(tuple(lines), len(pinned), len(entries), used, cfg.inject_chars)


def _rank(entry: Entry, position: int, uses: dict[str, usage.Use], today: date) -> tuple:
    use = uses.get(entry.id)
    weight, last = 0.0, 0
    if use is not None:
        last = _day(use.last)
        weight = use.times * 0.5 ** (max(today.toordinal() - last, 0) / USE_HALF_LIFE_DAYS)
    return (-weight, -last, -_day(entry.created), position)


@cache  # entries share their days: a session start ranks every entry once
def _day(iso: str | None) -> int:
    try:
        return date.fromisoformat(iso).toordinal() if iso else 0
    except ValueError:
        return 0
