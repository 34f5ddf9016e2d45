"""The persisted search index over the memory files, kept in step with them incrementally.

`SearchIndex.open(path, sources, params, tokenizer)` loads `path` if it is valid (magic,
format version, payload hash, BM25 parameters, Python marshal version), otherwise rebuilds it
(a corrupt file raises `CorruptIndexWarning` as a warning, never an error). `sync()` stats each
source file; a file whose size or mtime changed is re-read, and if its hash changed only the
entries that are new or changed are tokenized. The index is saved atomically when it changed.
"""

from __future__ import annotations

import marshal
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import xxhash

from ground.files import atomic_write, private_lock
from memory.bm25 import Bm25Params, Index, weighted_terms
from memory.entry import Entry
from memory.markdown import parse
from memory.tokenize import Tokenizer

MAGIC = b"CTXMIDX1"
FORMAT_VERSION = 2  # bump when the tokenizer or payload layout changes
# A file modified this recently may change again within the same mtime tick: hash it anyway.
_MTIME_SLACK_NS = 2_000_000_000


_FILE = list(Entry.__dataclass_fields__).index("file")


class CorruptIndexWarning(UserWarning):
    """The index file could not be trusted and was rebuilt from the memory files."""


@dataclass(frozen=True)
class Source:
    """A memory file; bullets outside typed sections are entries of `default_type` (None: not entries)."""

    path: Path
    scope: str
    default_type: str | None = None


def _entry_key(entry: Entry) -> str:
    e = entry
    data = marshal.dumps((e.id, e.type, e.text, e.created, e.pinned, tuple(e.tags), e.scope, e.file, e.section))
    return xxhash.xxh64_hexdigest(data)


class SearchIndex:
    def __init__(self, params: Bm25Params, tokenizer: Tokenizer):
        self.params, self.tokenizer = params, tokenizer
        self.index = Index(params)
        self.rows: dict[int, tuple] = {}  # doc -> Entry fields in order (cheap to load; see entry())
        self.keys: dict[str, int] = {}  # entry key -> doc
        self._doc_keys: dict[int, str] | None = {}  # doc -> entry key (keys inverted, when needed)
        self.weight_tables: dict = {}  # memory.api's per-day recency weights, kept with the index
        self.signatures: dict[str, tuple[int, int, str]] = {}  # path -> (size, mtime_ns, hash)
        self.next_doc = 0
        self.changed = False

    # --- persistence ---------------------------------------------------------------------

    def _payload(self) -> bytes:
        p = self.params
        buckets, lengths = self.index.dump()
        return marshal.dumps(
            {
                "version": FORMAT_VERSION,
                "params": (p.k1, p.b, p.heading_weight),
                "signatures": self.signatures,
                "next_doc": self.next_doc,
                "entries": self.rows,
                "keys": self.keys,
                "postings": buckets,
                "lengths": lengths,
            }
        )

    def save(self, path: Path) -> None:
        payload = self._payload()
        atomic_write(path, MAGIC + xxhash.xxh64_digest(payload) + payload, fsync=False)  # rebuildable
        self.changed = False

    def _restore(self, blob: bytes) -> None:
        """Fill self from a saved blob; raises ValueError on anything that does not check out."""
        if blob[: len(MAGIC)] != MAGIC:
            raise ValueError("not a ctxmill memory index")
        digest, payload = blob[len(MAGIC) : len(MAGIC) + 8], blob[len(MAGIC) + 8 :]
        if xxhash.xxh64_digest(payload) != digest:
            raise ValueError("checksum mismatch")
        try:
            data = marshal.loads(payload)
            if data["version"] != FORMAT_VERSION:
                raise _Stale()  # written by another version of ctxmill: rebuild without a warning
            rows = data["entries"]
            params = tuple(data["params"])
            keys, postings, lengths = data["keys"], data["postings"], data["lengths"]
            signatures, next_doc = data["signatures"], data["next_doc"]
        except (EOFError, TypeError, KeyError) as exc:
            raise ValueError(f"unreadable payload ({exc.__class__.__name__})") from exc
        if set(keys.values()) != set(rows) or set(lengths) != set(rows):
            raise ValueError("inconsistent documents")
        if params != (self.params.k1, self.params.b, self.params.heading_weight):
            raise _Stale()
        self.rows, self.keys, self.signatures, self.next_doc = rows, keys, signatures, next_doc
        self._doc_keys = None
        self.index.load(postings, lengths)

    @classmethod
    def open(cls, path: Path | None, sources: list[Source], params: Bm25Params, tokenizer: Tokenizer) -> SearchIndex:
        """Load (or rebuild) the index at `path` and bring it up to date with `sources`."""
        index = cls(params, tokenizer)
        if path is not None and path.exists():
            try:
                index._restore(path.read_bytes())
            except _Stale:
                index = cls(params, tokenizer)
            except (ValueError, OSError) as exc:
                warnings.warn(CorruptIndexWarning(f"memory index {path} was corrupt ({exc}); rebuilt it"), stacklevel=2)
                index = cls(params, tokenizer)
        index.sync(sources)
        if path is not None and (index.changed or not path.exists()):
            with private_lock(path.with_name(path.name + ".lock")):
                index.save(path)
        return index

    # --- keeping in step with the files -------------------------------------------------

    def sync(self, sources: list[Source]) -> None:
        known = {str(s.path) for s in sources}
        for path in [p for p in self.signatures if p not in known]:
            self._replace_file(path, [])
            del self.signatures[path]
        for source in sources:
            self._sync_source(source)

    def _sync_source(self, source: Source) -> None:
        key = str(source.path)
        old = self.signatures.get(key)
        try:
            stat = source.path.stat()
        except FileNotFoundError:
            if old is not None:
                self._replace_file(key, [])
                del self.signatures[key]
            return
        settled = time.time_ns() - stat.st_mtime_ns > _MTIME_SLACK_NS
        if old is not None and old[:2] == (stat.st_size, stat.st_mtime_ns) and settled:
            return
        data = source.path.read_bytes()
        digest = xxhash.xxh64_hexdigest(data)
        if old is None or old[2] != digest:
            doc = parse(data.decode("utf-8", errors="replace"), source.scope, key, source.default_type)
            self._replace_file(key, doc.entries())
        signature = (stat.st_size, stat.st_mtime_ns, digest)
        if signature != old:  # an unsettled file whose bytes did not change is not a change
            self.signatures[key] = signature
            self.changed = True

    def written(self, path: Path, before: bytes, after: bytes, added: Entry | None = None, removed: Entry | None = None) -> bool:
        """A writer that holds the file's lock replaced `before` with `after` by adding or removing
        one entry: if the index was in step with `before`, apply the change here instead of
        re-reading the file at the next sync. False when the index must re-read the file."""
        key = str(path)
        old = self.signatures.get(key)
        if old is None or old[2] != xxhash.xxh64_hexdigest(before):
            return False
        if removed is not None:
            doc = self.keys.get(_entry_key(removed))
            if doc is None:
                return False
            self._remove(doc)
        if added is not None:
            self.add(added)
        stat = path.stat()
        self.signatures[key] = (stat.st_size, stat.st_mtime_ns, xxhash.xxh64_hexdigest(after))
        self.changed = True
        return True

    def entry(self, doc: int) -> Entry:
        return Entry(*self.rows[doc][:5], tuple(self.rows[doc][5]), *self.rows[doc][6:])

    def _terms(self, entry: Entry) -> dict[str, float]:
        heading = f"{entry.section} {' '.join(entry.tags)}"
        return weighted_terms(self.tokenizer.tokens(entry.text), self.tokenizer.tokens(heading), self.params.heading_weight)

    def _keys_by_doc(self) -> dict[int, str]:
        if self._doc_keys is None:
            self._doc_keys = {doc: key for key, doc in self.keys.items()}
        return self._doc_keys

    def _remove(self, doc: int) -> None:
        # The entry's terms again (the tokenizer is deterministic), so no bucket is decoded to find them.
        self.index.remove(doc, self._terms(self.entry(doc)))
        del self.rows[doc]
        key = self._keys_by_doc().pop(doc)
        self.keys.pop(key, None)
        self.changed = True

    def _replace_file(self, file: str, entries: list[Entry]) -> None:
        wanted = {_entry_key(e): e for e in entries}
        doc_keys = self._keys_by_doc()
        for doc in [d for d, row in self.rows.items() if row[_FILE] == file]:
            if doc_keys[doc] not in wanted:
                self._remove(doc)
        for key, entry in wanted.items():
            if key not in self.keys:
                self.add(entry, key)
        self.changed = True

    def add(self, entry: Entry, key: str | None = None) -> int:
        """Index one entry (the incremental update); returns its document number."""
        doc = self.next_doc
        self.next_doc += 1
        self.index.add(doc, self._terms(entry))
        self.rows[doc] = tuple(entry.to_dict().values())
        key = key or _entry_key(entry)
        self.keys[key] = doc
        self._keys_by_doc()[doc] = key
        self.changed = True
        return doc


class _Stale(Exception):
    """The index was built with other BM25 parameters or another format version: rebuild silently."""
