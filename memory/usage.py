"""How often and how recently each memory entry was found useful: the ranking behind the
injected-memory budget (memory.inject).

`record(cfg, ids, day)` counts one use of each entry id on `day` (an ISO date): a search hit the
agent received through `memory_search`, or an entry injected with a prompt. `load(cfg)` gives
id -> Use(count, last day). Kept in `<project home>/.index/usage.json` (the search index's folder:
the global home when the project has none), read and replaced whole under a lock, written
atomically. Deterministic: counts and days, no clock times, so the same uses give the same file.
A file that cannot be read counts as no uses and one that cannot be written is not (fail open: a
search never fails for it); ids no longer in memory are harmless.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from memory import api
from memory.config import MemoryConfig

USAGE_FILE = "usage.json"
MAX_IDS = 100_000  # the least used beyond this are forgotten, so the file stays small


class Use(NamedTuple):
    count: int
    last: str  # ISO date of the latest use


def _path(cfg: MemoryConfig) -> Path:
    return api.index_path(cfg).with_name(USAGE_FILE)


def load(cfg: MemoryConfig) -> dict[str, Use]:
    """id -> its uses; {} when there are none or the file is unreadable."""
    import orjson

    try:
        data = orjson.loads(_path(cfg).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {key: Use(value[0], value[1]) for key, value in data.items()
            if isinstance(value, list) and len(value) == 2 and isinstance(value[0], int)
            and not isinstance(value[0], bool) and isinstance(value[1], str)}


def record(cfg: MemoryConfig, ids, day: str) -> None:
    """Count one use of each id on `day`."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return
    import orjson

    from ground.files import atomic_write, private_lock

    path = _path(cfg)
    try:
        with private_lock(path.with_name("." + USAGE_FILE + ".lock")):
            uses = load(cfg)
            for entry_id in ids:
                old = uses.get(entry_id, Use(0, day))
                uses[entry_id] = Use(old.count + 1, max(old.last, day))
            if len(uses) > MAX_IDS:
                uses = dict(sorted(uses.items(), key=lambda kv: (kv[1].count, kv[1].last, kv[0]), reverse=True)[:MAX_IDS])
            data = orjson.dumps({k: list(v) for k, v in sorted(uses.items())})
            atomic_write(path, data, fsync=False)  # a count lost to a crash is harmless
    except OSError:  # a read-only home: the search or injection that counts the use goes on
        return
