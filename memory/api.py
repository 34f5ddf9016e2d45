"""Library API of durable memory (see the package docstring in memory/__init__.py)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path

from memory.bm25 import Weights
from memory.config import MemoryConfig
from memory.entry import SCOPES, TYPES, Entry, Hit, new_id, now
from memory.index_file import CorruptIndexWarning, SearchIndex, Source
from memory.pieces import CorruptPiece
from memory.tokenize import Tokenizer

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (see tests/memory/test_cli.py)
if TYPE_CHECKING:  # memory.markdown loads regex: a search with an up-to-date index never imports it
    from filelock import BaseFileLock

    from memory.markdown import MemoryDocument

MEMORY_FILE = "MEMORY.md"
NOTES_FILE = "notes.md"
INDEX_FILE = Path(".index") / "index.bin"


class BadInput(ValueError):
    """Invalid arguments: empty text, unknown type or scope, malformed tag."""


class NotFound(LookupError):
    """No entry has the given id."""


_tokenizers: dict[Path, Tokenizer] = {}
_indexes: dict[tuple, SearchIndex] = {}


def tokenizer(cfg: MemoryConfig) -> Tokenizer:
    """The memory tokenizer for this configuration, created once per process."""
    if cfg.jieba_cache not in _tokenizers:
        _tokenizers[cfg.jieba_cache] = Tokenizer(cfg.jieba_cache)
    return _tokenizers[cfg.jieba_cache]


def _home(cfg: MemoryConfig, scope: str) -> Path:
    return cfg.global_home if scope == "global" else cfg.project_home


_source_lists: dict[tuple[Path, Path], list[Source]] = {}


def _sources(cfg: MemoryConfig) -> list[Source]:
    known = _source_lists.get((cfg.project_home, cfg.global_home))
    if known is not None:
        return known
    homes = [("project", cfg.project_home)]
    if cfg.global_home.resolve() != cfg.project_home.resolve():
        homes.append(("global", cfg.global_home))
    sources = [
        source
        for scope, home in homes
        for source in (Source(home / MEMORY_FILE, scope), Source(home / NOTES_FILE, scope, "note"))
    ]
    _source_lists[(cfg.project_home, cfg.global_home)] = sources
    return sources


def index_home(cfg: MemoryConfig) -> Path:
    """The home the index lives in: the project home when it exists (searching never creates a
    project's `.ctxmill/`), else the global home. Its files are read inside it
    (ground.home_files)."""
    return cfg.project_home if cfg.project_home.is_dir() else cfg.global_home


def index_path(cfg: MemoryConfig) -> Path:
    return index_home(cfg) / INDEX_FILE


def lock(path: Path) -> BaseFileLock:
    """The write lock of a memory file (held while reading, changing and replacing it)."""
    from ground.files import private_lock  # only writers pay for the lock import

    return private_lock(path.with_name("." + path.name + ".lock"))


def _read(path: Path, scope: str, default_type: str | None = None) -> MemoryDocument:
    """The memory file at `path` as read for injection, listing and duplicates: a file refused
    (a link out of its home, a device, over its cap) is empty, with a warning."""
    from memory.reading import read_file_or_skip

    return _parse(read_file_or_skip(path), path, scope, default_type)


def _read_bytes(path: Path) -> bytes:
    """The memory file at `path` as a writer reads it before replacing it (OSError when refused)."""
    from memory.reading import read_file

    return read_file(path)


def _parse(data: bytes, path: Path, scope: str, default_type: str | None = None) -> MemoryDocument:
    from memory.markdown import decode, parse  # a search with an up-to-date index parses nothing

    return parse(decode(data), scope, str(path), default_type)


def index_written(cfg: MemoryConfig, path: Path, before: bytes, after: bytes, added: Iterable[Entry] = (),
                  removed: Iterable[Entry] = ()) -> None:
    """Keep the index in step with a write made under the file's lock (`store`, `forget`, the
    memory tool's files): the index this process has open, else the one on disk, takes the change
    and is saved, so no later search re-reads and re-indexes the whole file. `removed` are the
    entries `before` had and `after` has not, `added` the other way round. Skipped when the index
    was not in step with `before` (the next search re-reads the file)."""
    where = index_path(cfg)
    key = (where, cfg.bm25, cfg.jieba_cache)
    index = _indexes.get(key)
    if index is None or _changed_on_disk(index, where):
        index = (SearchIndex.load(where, cfg.bm25, tokenizer(cfg), index_home(cfg))
                 if where.exists() else None)
        if index is None:
            return
        _indexes[key] = index
    try:
        if index.written(path, before, after, added, removed):
            index.save(where)
    except CorruptPiece as exc:  # the next search rebuilds the index
        _indexes.pop(key, None)
        where.unlink(missing_ok=True)
        _warn_corrupt(where, exc)


def _warn_corrupt(index_path: Path, exc: Exception) -> None:
    warnings.warn(CorruptIndexWarning(f"memory index {index_path} was corrupt ({exc}); rebuilt it"), stacklevel=3)


def _changed_on_disk(index: SearchIndex, path: Path) -> bool:
    """Another process saved the index file since this process loaded or saved it."""
    try:
        stat = path.stat()
    except OSError:
        return False
    return index.stamp != (stat.st_size, stat.st_mtime_ns)


def _check_scope(scope: str, allowed: tuple[str, ...]) -> None:
    if scope not in allowed:
        raise BadInput(f"unknown scope {scope!r} (use one of: {', '.join(allowed)})")


def same_text(a: str, b: str) -> bool:
    """Whether two entry texts say the same words (case and spacing aside)."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def store(
    cfg: MemoryConfig, type: str, text: str, pin: bool = False, tags: Iterable[str] = (), scope: str = "project",
    notes: bool = False
) -> Entry:
    """Append a redacted entry to the scope's MEMORY.md (notes.md with `notes`) and return it as
    stored. Text the scope's memory already holds (`same_text`) is not stored again: the
    existing entry is returned. Raises BadInput for text over `cfg.max_entry_chars`."""
    if type not in TYPES:
        raise BadInput(f"unknown type {type!r} (use one of: {', '.join(TYPES)})")
    _check_scope(scope, SCOPES)
    import regex  # tags are words in any script; a search needs no `regex`

    from ground.files import atomic_write
    from ground.redact import redact  # only writers pay for compiling the secret patterns
    from memory.markdown import encode, normalize_text

    text = normalize_text(redact(text, cfg.redact_extra, cfg.redact_allow))
    if not text:
        raise BadInput("empty text")
    if len(text) > cfg.max_entry_chars:
        raise BadInput(f"entry is {len(text):,} characters; the limit is {cfg.max_entry_chars:,} "
                       "(store the gist, keep long detail in a file and name it)")
    clean_tags = tuple(dict.fromkeys(t.strip().lstrip("#") for t in tags if t.strip()))
    bad = [t for t in clean_tags if not regex.fullmatch(r"[\w.-]+", t)]
    if bad:
        raise BadInput(f"bad tag {bad[0]!r} (letters, digits, '_', '.', '-' only)")
    home = _home(cfg, scope)
    path = home / (NOTES_FILE if notes else MEMORY_FILE)
    other = home / (MEMORY_FILE if notes else NOTES_FILE)
    with lock(path):
        before = _read_bytes(path)
        doc = _parse(before, path, scope, "note" if notes else None)
        known = doc.entries() + _read(other, scope, None if notes else "note").entries()
        existing = next((e for e in known if same_text(e.text, text)), None)
        if existing is not None:
            return existing
        taken = {e.id for e in doc.entries()}
        created, salt = now(), 0
        while (entry_id := new_id(text, created, salt)) in taken:
            salt += 1
        entry = Entry(entry_id, type, text, created.date().isoformat(), pin, clean_tags)
        stored = doc.add(entry)
        after = encode(doc.text())
        atomic_write(path, after)
        index_written(cfg, path, before, after, added=[stored])
    return stored


def _edit_entry(cfg: MemoryConfig, id: str, edit: Callable[[MemoryDocument, Entry], Entry | None]
                ) -> tuple[Entry, Entry | None]:
    """Apply `edit(doc, entry)` to the entry with this id in whichever memory file holds it, under
    the file's lock, and keep the index in step; returns (the entry as it was, what `edit`
    returned: the entry as it is now, or None when removed)."""
    from ground.files import atomic_write
    from memory.markdown import encode

    for source in _sources(cfg):
        if not source.path.exists():
            continue
        with lock(source.path):
            before = _read_bytes(source.path)
            doc = _parse(before, source.path, source.scope, source.default_type)
            entry = next((e for e in doc.entries() if e.id == id), None)
            if entry is None:
                continue
            now_entry = edit(doc, entry)
            after = encode(doc.text())  # bytes that do not decode are written back as they were
            atomic_write(source.path, after)
            index_written(cfg, source.path, before, after, added=[now_entry] if now_entry else [], removed=[entry])
            return entry, now_entry
    raise NotFound(f"no memory entry with id {id!r}")


def forget(cfg: MemoryConfig, id: str) -> Entry:
    """Remove the entry with this id from whichever memory file holds it; returns it."""
    return _edit_entry(cfg, id, lambda doc, entry: doc.remove(entry.id) and None)[0]


def set_pinned(cfg: MemoryConfig, id: str, pinned: bool = True) -> Entry:
    """Pin (inject at every session start) or unpin the entry with this id; returns it as stored."""
    _, stored = _edit_entry(cfg, id, lambda doc, entry: doc.replace_entry(entry.id, entry.replace(pinned=pinned)))
    assert stored is not None, "replace_entry returns the entry it stored under the lock"
    return stored


def list_entries(cfg: MemoryConfig, scope: str = "all") -> list[Entry]:
    """All entries in file order, project first."""
    _check_scope(scope, ("all", *SCOPES))
    from memory.parsed import entries  # each file parsed once per change of its bytes

    return [
        entry
        for source in _sources(cfg)
        if scope in ("all", source.scope)
        for entry in entries(cfg, source.path, source.scope, source.default_type)
    ]


def pinned(cfg: MemoryConfig) -> list[Entry]:
    """Entries to inject at every session start."""
    return [e for e in list_entries(cfg) if e.pinned]


def open_index(cfg: MemoryConfig, rebuild: bool = False) -> SearchIndex:
    """The search index, loaded once per process and re-synced with the files on every call
    (reloaded when another process saved a newer index file)."""
    path = index_path(cfg)
    key = (path, cfg.bm25, cfg.jieba_cache)
    cached = None if rebuild else _indexes.get(key)
    if cached is not None and not _changed_on_disk(cached, path):
        cached.sync(_sources(cfg))
        if cached.changed:
            cached.save(path)
        return cached
    if rebuild:
        path.unlink(missing_ok=True)
    index = SearchIndex.open(path, _sources(cfg), cfg.bm25, tokenizer(cfg), index_home(cfg))
    _indexes[key] = index
    return index


def reindex(cfg: MemoryConfig) -> int:
    """Rebuild the index from the files; returns the number of entries indexed."""
    return len(open_index(cfg, rebuild=True).rows)


def _weights(cfg: MemoryConfig, index: SearchIndex, scope: str) -> Weights | None:
    """doc -> score multiplier: 0 outside `scope`, else 1 - cfg.recency * (1 - d), d the entry's
    decay: floor + (1 - floor) * 0.5 ** (age / half-life of its type), 1 when pinned, undated or
    of a type that never decays (a tie-breaker: see memory.config.MemoryConfig). One table per
    day, scope and decay settings, kept with the index, so each (type, date, pin, scope) code's
    weight is computed once and the index caches its impact lists with the weights multiplied in."""
    if not cfg.decay and scope == "all":
        return None
    today = date.today()
    key = (scope, today, cfg.decay, cfg.decay_floor, tuple(sorted(cfg.half_lives.items())) if cfg.decay else (), cfg.recency)
    table = index.weight_tables.get(key)
    if table is not None:
        return table
    meta_table, half_lives, floor, strength = index.meta_table, cfg.half_lives, cfg.decay_floor, cfg.recency
    today_number = today.toordinal()

    def weight(code: int) -> float:
        entry_type, created, pinned, entry_scope = meta_table[code]
        if scope not in ("all", entry_scope):
            return 0.0
        half_life = half_lives.get(entry_type) if cfg.decay and not pinned and created else None
        if half_life is None:
            return 1.0
        try:
            age = max(today_number - date.fromisoformat(created).toordinal(), 0)
        except ValueError:
            return 1.0
        return 1.0 - strength * (1.0 - (floor + (1.0 - floor) * 0.5 ** (age / half_life)))

    if len(index.weight_tables) >= 8:
        index.weight_tables.clear()
    table = index.weight_tables[key] = Weights(key, weight, codes=index.meta)
    return table


def snippet(text: str, query_terms: list[str], width: int = 160) -> str:
    """About `width` characters of `text` around the first place a query word occurs."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    hits = [at for t in query_terms if len(t) > 1 and (at := lower.find(t)) >= 0]
    start = max(0, min(hits) - width // 4) if hits else 0
    start = min(start, len(flat) - width)
    return ("…" if start else "") + flat[start : start + width].strip() + ("…" if start + width < len(flat) else "")


def search(cfg: MemoryConfig, query: str, limit: int = 5, scope: str = "all") -> list[Hit]:
    """Best `limit` entries for `query`, best first."""
    _check_scope(scope, ("all", *SCOPES))
    if limit < 1:
        raise BadInput("limit must be at least 1")
    try:
        return _search(cfg, open_index(cfg), query, limit, scope)
    except CorruptPiece as exc:  # a piece of the index file read only now did not check out
        _warn_corrupt(index_path(cfg), exc)
        return _search(cfg, open_index(cfg, rebuild=True), query, limit, scope)


def _search(cfg: MemoryConfig, index: SearchIndex, query: str, limit: int, scope: str) -> list[Hit]:
    terms = index.tokenizer.query_terms(query, index.params.fragment_weight, index.has_long_word)
    found = index.index.search(terms, limit, _weights(cfg, index, scope))
    words = list(dict.fromkeys([w.lower() for w in query.split()] + list(terms)))
    hits = []
    for doc, score in found:
        entry = index.entry(doc)
        hits.append(Hit(entry, score, snippet(entry.text, words)))
    return hits
