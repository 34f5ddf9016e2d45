"""The persisted search index over the memory files, kept in step with them incrementally.

`SearchIndex.open(path, sources, params, tokenizer)` loads `path` if it is valid (magic,
format version, header hash, BM25 parameters, Python marshal version), otherwise rebuilds it
(a corrupt file raises `CorruptIndexWarning` as a warning, never an error). `sync()` stats each
source file; a file whose size or mtime changed is re-read, and if its hash changed only the
entries that are new or changed are tokenized. The index is saved atomically when it changed.

The file (memory.pieces) is a checked header and pieces read only when needed: posting lists
in 512 buckets by term (see memory.bm25), entry rows in chunks of 64 documents, the entry keys,
and two arrays indexed by document: lengths and a code into the header's table of (type,
created, pinned, scope) for the recency weights. Opening it reads the header and the two arrays;
a search then reads the buckets of its terms and the rows of its hits. Each piece keeps its
serialized form until it changes, so a save after a one-entry change re-encodes a few small
pieces. A piece found corrupt only when read raises `memory.pieces.CorruptPiece`. The index also
keeps its terms of 3+ characters outside ASCII (`has_long_word`), so a Chinese query whose runs
hold none of them is not cut with jieba (memory.tokenize.Tokenizer.query_terms).
"""

from __future__ import annotations

import marshal
import time
import warnings
from array import array
from collections.abc import Iterable, Mapping
from pathlib import Path

import xxhash

from ground.records import Record, field_names
from memory import pieces
from memory.bm25 import BUCKETS, Bm25Params, Index, weighted_terms
from memory.entry import Entry
from memory.tokenize import Tokenizer

MAGIC = b"CTXMIDX3"
_OLD_MAGICS = (b"CTXMIDX1", b"CTXMIDX2")  # written by older versions: rebuilt without a warning
FORMAT_VERSION = 3  # bump when the tokenizer or payload layout changes
# A file modified this recently may change again within the same mtime tick: hash it anyway.
_MTIME_SLACK_NS = 2_000_000_000
_ROW_CHUNK = 64
_NO_META = -1  # the meta code of a document number no entry has

_FIELDS = list(field_names(Entry))
_FILE = _FIELDS.index("file")
_META = tuple(_FIELDS.index(f) for f in ("type", "created", "pinned", "scope"))


class CorruptIndexWarning(UserWarning):
    """The index file could not be trusted and was rebuilt from the memory files."""


class Source(Record):
    """A memory file; bullets outside typed sections are entries of `default_type` (None: not entries)."""

    path: Path
    scope: str
    default_type: str | None = None


def _entry_key(entry: Entry) -> str:
    """Hash of every field (marshal output depends on object identity, so it is not used here)."""
    e = entry
    fields = (e.id, e.type, e.text, e.created or "", "p" if e.pinned else "", "\x01".join(e.tags), e.scope, e.file, e.section)
    return xxhash.xxh64_hexdigest("\x00".join(fields).encode("utf-8", "surrogatepass"))


class Rows:
    """doc -> the entry's fields in order (a tuple), in chunks of _ROW_CHUNK documents that are
    decoded on first access and keep their serialized form until they change."""

    def __init__(self, blobs: Mapping[int, bytes | pieces.Piece] | None = None, count: int = 0):
        self._chunks: dict[int, dict[int, tuple]] = {}
        self._blobs: dict[int, bytes | pieces.Piece] = dict(blobs or {})
        self._count = count

    def _chunk(self, c: int) -> dict[int, tuple]:
        chunk = self._chunks.get(c)
        if chunk is None:
            blob = self._blobs.get(c)
            chunk = self._chunks[c] = marshal.loads(bytes(blob)) if blob is not None else {}
        return chunk

    def __getitem__(self, doc: int) -> tuple:
        return self._chunk(doc // _ROW_CHUNK)[doc]

    def __contains__(self, doc: int) -> bool:
        return doc in self._chunk(doc // _ROW_CHUNK)

    def __setitem__(self, doc: int, row: tuple) -> None:
        chunk = self._chunk(doc // _ROW_CHUNK)
        self._count += doc not in chunk
        chunk[doc] = row
        self._blobs.pop(doc // _ROW_CHUNK, None)

    def __delitem__(self, doc: int) -> None:
        del self._chunk(doc // _ROW_CHUNK)[doc]
        self._count -= 1
        self._blobs.pop(doc // _ROW_CHUNK, None)

    def __len__(self) -> int:
        return self._count

    def items(self):
        for c in sorted(set(self._blobs) | set(self._chunks)):
            yield from self._chunk(c).items()

    def dump(self) -> dict[int, bytes | pieces.Piece]:
        for c, chunk in self._chunks.items():
            if c not in self._blobs and chunk:
                self._blobs[c] = marshal.dumps(chunk)
        return {c: blob for c, blob in self._blobs.items() if c not in self._chunks or self._chunks[c]}


class _Group:
    """The pieces (name, 0) .. (name, size - 1) of a file as a sequence, each made when asked for."""

    def __init__(self, parts: pieces.Pieces, name: str, size: int):
        if any((name, i) not in parts for i in range(size)):
            raise ValueError(f"missing {name} pieces")
        self._parts, self._name, self._size = parts, name, size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int) -> pieces.Piece:
        return self._parts[(self._name, i)]


class _Packed:
    """A value marshal can write, decoded when first used; its serialized form is kept until
    `changed()` says the value was changed in place."""

    def __init__(self, value=None, blob=None):
        self._value, self._blob = value, blob

    @property
    def value(self):
        if self._value is None:
            self._value = marshal.loads(bytes(self._blob))
        return self._value

    def changed(self) -> None:
        self._blob = None

    def blob(self):
        if self._blob is None:
            self._blob = marshal.dumps(self._value)
        return self._blob


def _long_words(terms) -> list[str]:
    """The terms of 3+ characters outside ASCII: among them every jieba word a text gave."""
    return [t for t in terms if len(t) >= 3 and not t.isascii()]


class SearchIndex:
    def __init__(self, params: Bm25Params, tokenizer: Tokenizer):
        self.params, self.tokenizer = params, tokenizer
        self.index = Index(params)
        self.rows = Rows()  # doc -> Entry fields in order (see entry())
        self._keys = _Packed({})  # entry key -> doc (see keys)
        self._words = _Packed(set())  # the index's _long_words (see has_long_word)
        self._doc_keys: dict[int, str] | None = {}  # doc -> entry key (keys inverted, when needed)
        self.meta = array("i")  # doc -> code of (type, created, pinned, scope) in meta_table, or _NO_META
        self.meta_table: list[tuple] = []
        self._meta_codes: dict[tuple, int] | None = {}
        self.weight_tables: dict = {}  # memory.api's per-day recency weights, kept with the index
        self.signatures: dict[str, tuple[int, int, str]] = {}  # path -> (size, mtime_ns, hash)
        self.next_doc = 0
        self.changed = False
        self.stamp: tuple[int, int] | None = None  # (size, mtime_ns) of the index file as last loaded or saved

    @property
    def keys(self) -> dict[str, int]:
        return self._keys.value

    def has_long_word(self, text: str) -> bool:
        """Whether `text` is a term of 3+ characters outside ASCII of some entry: a query's CJK
        run none of whose substrings is one needs no jieba words (memory.tokenize)."""
        return text in self._words.value

    # --- persistence ---------------------------------------------------------------------

    def save(self, path: Path) -> None:
        p = self.params
        buckets, lengths = self.index.dump()
        header = {"version": FORMAT_VERSION, "params": (p.k1, p.b, p.heading_weight), "signatures": self.signatures,
                  "next_doc": self.next_doc, "meta_table": self.meta_table}
        parts = {"lengths": lengths, "meta": self.meta.tobytes(), "keys": self._keys.blob(), "words": self._words.blob()}
        parts.update({("postings", i): blob for i, blob in enumerate(buckets)})
        parts.update({("rows", c): blob for c, blob in self.rows.dump().items()})
        pieces.write(path, MAGIC, header, parts)  # not fsync'd: rebuildable
        self.changed = False
        self._stamp(path)

    def _stamp(self, path: Path) -> None:
        try:
            stat = path.stat()
            self.stamp = (stat.st_size, stat.st_mtime_ns)
        except OSError:
            self.stamp = None

    def _restore(self, path: Path, root: Path | None) -> None:
        """Fill self from the file at `path` (inside the folder `root`: memory.pieces.read); raises
        ValueError on anything that does not check out, _Stale for another version or parameters."""
        try:
            header, parts, stat = pieces.read(path, MAGIC, root)
        except pieces.WrongMagic as exc:
            if exc.found in _OLD_MAGICS:
                raise _Stale() from None
            raise
        try:
            if header["version"] != FORMAT_VERSION:
                raise _Stale()  # written by another version of ctxmill: rebuild without a warning
            params, signatures, next_doc = tuple(header["params"]), header["signatures"], header["next_doc"]
            meta_table = header["meta_table"]
            buckets = _Group(parts, "postings", BUCKETS)
            rows = {key[1]: parts[key] for key in parts if isinstance(key, tuple) and key[0] == "rows"}
            lengths, meta = bytes(parts["lengths"]), array("i", bytes(parts["meta"]))
            keys, words = _Packed(blob=parts["keys"]), _Packed(blob=parts["words"])
        except (TypeError, KeyError, IndexError) as exc:
            raise ValueError(f"unreadable header ({exc.__class__.__name__})") from exc
        if params != (self.params.k1, self.params.b, self.params.heading_weight):
            raise _Stale()
        self.index.load(buckets, lengths)
        if len(meta) != len(self.index.lengths) or len(meta) > next_doc:
            raise ValueError("inconsistent documents")
        self.rows, self.signatures, self.next_doc = Rows(rows, len(self.index)), signatures, next_doc
        self._keys, self._words, self._doc_keys = keys, words, None
        self.meta, self.meta_table, self._meta_codes = meta, meta_table, None
        self.stamp = (stat.st_size, stat.st_mtime_ns)  # of the file read, even if replaced since

    @classmethod
    def load(cls, path: Path, params: Bm25Params, tokenizer: Tokenizer,
             root: Path | None = None) -> SearchIndex | None:
        """The saved index as it is (not synced with the files); None if missing or unusable."""
        index = cls(params, tokenizer)
        try:
            index._restore(path, root)
        except (ValueError, OSError, _Stale):
            return None
        return index

    @classmethod
    def open(cls, path: Path | None, sources: list[Source], params: Bm25Params,
             tokenizer: Tokenizer, root: Path | None = None) -> SearchIndex:
        """Load (or rebuild) the index at `path` (inside `root`), up to date with `sources`."""
        index = cls(params, tokenizer)
        if path is not None and path.exists():
            try:
                index._restore(path, root)
            except _Stale:
                index = cls(params, tokenizer)
            except (ValueError, OSError) as exc:
                warnings.warn(CorruptIndexWarning(f"memory index {path} was corrupt ({exc}); rebuilt it"), stacklevel=2)
                index = cls(params, tokenizer)
        index.sync(sources)
        if path is not None and (index.changed or not path.exists()):
            from ground.files import private_lock  # a search of an up-to-date index takes no lock

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
        from memory.reading import read_file_or_skip

        data = read_file_or_skip(source.path)
        digest = xxhash.xxh64_hexdigest(data)
        if old is None or old[2] != digest:
            from memory.markdown import decode, parse  # only a changed file is parsed

            doc = parse(decode(data), source.scope, key, source.default_type)
            self._replace_file(key, doc.entries())
        signature = (stat.st_size, stat.st_mtime_ns, digest)
        if signature != old:  # an unsettled file whose bytes did not change is not a change
            self.signatures[key] = signature
            self.changed = True

    def written(self, path: Path, before: bytes, after: bytes, added: Iterable[Entry] = (), removed: Iterable[Entry] = ()) -> bool:
        """A writer that holds the file's lock replaced `before` with `after`, which lost the
        entries `removed` and gained `added`: if the index was in step with `before`, apply the
        change here instead of re-reading the file at the next sync. False when the index must
        re-read the file (then nothing changed here)."""
        key = str(path)
        old = self.signatures.get(key)
        if old is None or old[2] != xxhash.xxh64_hexdigest(before):
            return False
        found = [self.keys.get(_entry_key(entry)) for entry in removed]
        gone = [doc for doc in found if doc is not None]
        if len(gone) != len(found):
            return False
        for doc in dict.fromkeys(gone):
            self._remove(doc)
        for entry in added:
            if _entry_key(entry) not in self.keys:
                self.add(entry)
        stat = path.stat()
        self.signatures[key] = (stat.st_size, stat.st_mtime_ns, xxhash.xxh64_hexdigest(after))
        self.changed = True
        return True

    def entry(self, doc: int) -> Entry:
        row = self.rows[doc]
        return Entry(*(*row[:5], tuple(row[5]), *row[6:]))  # one starred tuple: its length is the row's

    def _terms(self, entry: Entry) -> dict[str, float]:
        heading = f"{entry.section} {' '.join(entry.tags)}"
        return weighted_terms(self.tokenizer.tokens(entry.text), self.tokenizer.tokens(heading), self.params.heading_weight)

    def _meta_code(self, meta: tuple) -> int:
        if self._meta_codes is None:
            self._meta_codes = {m: i for i, m in enumerate(self.meta_table)}
        code = self._meta_codes.get(meta)
        if code is None:
            code = self._meta_codes[meta] = len(self.meta_table)
            self.meta_table.append(meta)
        return code

    def _keys_by_doc(self) -> dict[int, str]:
        if self._doc_keys is None:
            self._doc_keys = {doc: key for key, doc in self.keys.items()}
        return self._doc_keys

    def _remove(self, doc: int) -> None:
        # The entry's terms again (the tokenizer is deterministic), so no bucket is decoded to find them.
        terms = self._terms(self.entry(doc))
        self.index.remove(doc, terms)
        gone = [t for t in _long_words(terms) if self.index.posting(t) is None]
        if gone:
            self._words.value.difference_update(gone)
            self._words.changed()
        del self.rows[doc]
        self.meta[doc] = _NO_META
        key = self._keys_by_doc().pop(doc)
        self.keys.pop(key, None)
        self._keys.changed()
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
        terms = self._terms(entry)
        self.index.add(doc, terms)
        long = _long_words(terms)
        if long:
            self._words.value.update(long)
            self._words.changed()
        row = tuple(entry.to_dict().values())
        self.rows[doc] = row
        if doc >= len(self.meta):
            self.meta.extend([_NO_META] * (doc + 1 - len(self.meta)))
        self.meta[doc] = self._meta_code(tuple(row[i] for i in _META))
        key = key or _entry_key(entry)
        self.keys[key] = doc
        self._keys.changed()
        self._keys_by_doc()[doc] = key
        self.changed = True
        return doc


class _Stale(Exception):
    """The index was built with other BM25 parameters or another format version: rebuild silently."""
