"""How often and how recently each memory entry was found useful: the ranking behind the
injected-memory budget (memory.inject).

`record(cfg, ids, day)` counts one use of each entry id on `day` (an ISO date): a search hit the
agent received through `memory_search`, or an entry injected with a prompt. `load(cfg)` gives
id -> Use(times used, last day).

Kept in `<project home>/.index/usage.log` (the search index's folder: the global home when the
project has none), one line per record: the day, then the ids, each `id` or `id*N` (N uses). A
record is one append of one short line (no lock: the prompt hook pays no lock import, and
appends from many agents do not interleave); once the log passes COMPACT_BYTES a record
rewrites it as one line per day with `id*N` counts, under a lock and atomically (an append that
races the rewrite may be lost: a lost count is harmless). Deterministic: counts and days, no
clock times. A log that cannot be read counts as no uses and one that cannot be written is
skipped (fail open: a search never fails for it); ids no longer in memory are harmless.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memory import api
from memory.config import MemoryConfig

USAGE_FILE = "usage.log"
COMPACT_BYTES = 256 * 1024


class Use:
    """An entry's uses, as `load` reads them. A plain class: a prompt's hook, which only appends to
    the log (`record`), builds no record class for it (a dataclass costs ~0.5 ms to define), and
    not a typing.NamedTuple (SessionStart's process does not import typing)."""

    __slots__ = ("last", "times")

    def __init__(self, times: int, last: str) -> None:
        self.times = times  # uses counted
        self.last = last  # ISO date of the latest use


def _path(cfg: MemoryConfig) -> Path:
    return api.index_path(cfg).with_name(USAGE_FILE)


def load(cfg: MemoryConfig) -> dict[str, Use]:
    """id -> its uses; {} when there are none or the log is unreadable."""
    from ground.home_files import USAGE_BYTES, open_home_file

    try:
        log = open_home_file(api.index_home(cfg), api.INDEX_FILE.with_name(USAGE_FILE))
        if log is None:
            return {}
        with log:
            data = log.read(USAGE_BYTES)  # a log grown past it (compaction failing): read this far
    except OSError:
        return {}
    uses: dict[str, Use] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        day, *ids = line.split() or [""]
        for token in ids:
            entry_id, _, times = token.partition("*")
            n = int(times) if times.isdigit() else 1
            old = uses.get(entry_id)
            uses[entry_id] = Use(n, day) if old is None else Use(old.times + n, max(old.last, day))
    return uses


def record(cfg: MemoryConfig, ids, day: str) -> None:
    """Count one use of each id on `day`."""
    ids = [i for i in dict.fromkeys(ids) if i and not any(c.isspace() or c == "*" for c in i)]
    if not ids:
        return
    path = _path(cfg)
    line = (" ".join([day, *ids]) + "\n").encode("utf-8", "replace")
    try:
        from ground.files import private_dir

        private_dir(path.parent)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK  # a pipe: never waited on
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return
            os.write(fd, line)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > COMPACT_BYTES:
            _compact(cfg, path)
    except OSError:  # a read-only or broken home: the search or injection that counts the use goes on
        return


def _compact(cfg: MemoryConfig, path: Path) -> None:
    """Rewrite the log as one line per last-use day with `id*N` counts."""
    from ground.files import atomic_write, private_lock

    with private_lock(path.with_name("." + USAGE_FILE + ".lock")):
        by_day: dict[str, list[str]] = {}
        for entry_id, use in sorted(load(cfg).items()):
            by_day.setdefault(use.last, []).append(f"{entry_id}*{use.times}")
        text = "".join(f"{day} {' '.join(tokens)}\n" for day, tokens in sorted(by_day.items()))
        atomic_write(path, text.encode("utf-8"), fsync=False)
