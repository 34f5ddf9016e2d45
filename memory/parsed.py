"""The entries of a memory file (MEMORY.md, notes.md), parsed once per change of its bytes: a
session start lists every entry (`memory.inject`), and parsing 1,000 takes about 12 ms where
reading them back from here takes about 2.

Must hold:
- what `entries` returns is what `memory.markdown.parse(...).entries()` gives for the file's
  bytes as read now (`memory.reading.read_file_or_skip`): a cached list is used only when its key
  (the xxh3-128 of those bytes, the file's path, scope and default type, and `FORMAT`) is the
  key of what was read; any other (a stale, truncated, foreign or malformed cache file) is
  ignored, the file parsed, and the cache rewritten;
- the cache is the user's own, never a repository's: it lives in the user's global home
  (`<global home>/cache/memory`, not in a project home a cloned repository could ship), is read
  only when that folder is a real folder owned by this user with no symbolic link on its path
  (`ground.files.confined`) and the file a regular file opened without following a link, and is
  written atomically (0600, `ground.files`); a cache that cannot be read or written costs a
  parse, never the entries;
- a hit imports neither `memory.markdown` nor `orjson` (the hook's process has `json` loaded).
"""

from __future__ import annotations

import json

import xxhash

from memory.entry import Entry

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a hook's process does not import typing for this
if TYPE_CHECKING:
    from pathlib import Path

    from memory.config import MemoryConfig

FORMAT = 1
"""Bump when `memory.markdown.parse` gives other entries for the same bytes: every cache is then stale."""
CACHE_FOLDER = ("cache", "memory")
"""The caches' folder inside the global home."""
MAX_CACHE_BYTES = 64 * 2**20
"""A cache file larger than this is not read (MEMORY_BYTES of text, escaped, and its fields)."""


def entries(cfg: MemoryConfig, path: Path, scope: str, default_type: str | None) -> list[Entry]:
    """The entries of the memory file at `path` (see the module docstring)."""
    from memory.reading import read_file_or_skip

    data = read_file_or_skip(path)
    if not data:
        return []
    names = f"{path}\0{scope}\0{default_type or ''}".encode("utf-8", "surrogatepass")
    key = f"{FORMAT}-{xxhash.xxh3_128_hexdigest(data)}-{xxhash.xxh3_128_hexdigest(names)}"
    cache = cfg.global_home.joinpath(*CACHE_FOLDER, f"{xxhash.xxh3_64_hexdigest(names)}.json")
    found = _cached(cache, key)
    if found is not None:
        return found
    from memory.markdown import decode, parse

    parsed = parse(decode(data), scope, str(path), default_type).entries()
    _save(cache, key, parsed)
    return parsed


def _cached(cache: Path, key: str) -> list[Entry] | None:
    """The entries the cache file holds under `key`, or None (no such file, not the user's, not
    what `_save` writes, or another key)."""
    from ground.files import confined, open_regular, read_at_most

    try:
        confined(cache.parent)
        with open_regular(cache, follow=False) as source:
            record = json.loads(read_at_most(source, MAX_CACHE_BYTES, str(cache)))
    except (OSError, ValueError):  # ValueError: not JSON, or not UTF-8
        return None
    if not isinstance(record, dict) or record.get("key") != key or not isinstance(rows := record.get("entries"), list):
        return None
    try:
        return [_entry(row) for row in rows]
    except TypeError:
        return None


_ROWS = ((str, str, str, str, bool, list, str, str, str), (str, str, str, type(None), bool, list, str, str, str))
"""The types of an entry row's fields as `_save` writes them: created is a date or null."""


def _entry(row: object) -> Entry:
    """The entry `_save` wrote as `row`; TypeError when it is not one."""
    if type(row) is not list or tuple(map(type, row)) not in _ROWS:
        raise TypeError("not an entry row")
    entry_id, kind, text, created, pinned, tags, scope, file, section = row
    if tags and set(map(type, tags)) != {str}:
        raise TypeError("an entry's tags are not strings")
    return Entry(entry_id, kind, text, created, pinned, tuple(tags), scope, file, section)


def _save(cache: Path, key: str, parsed: list[Entry]) -> None:
    from ground.files import atomic_write

    rows = [list(e.to_dict().values()) for e in parsed]  # the fields in order, tags as a list
    data = json.dumps({"key": key, "entries": rows}, ensure_ascii=False, separators=(",", ":"))
    try:
        atomic_write(cache, data.encode("utf-8", "surrogatepass"), fsync=False)
    except OSError:
        pass  # a folder that is not the user's, a full disk: the next start parses again
