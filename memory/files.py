"""Memory files: the provider memory tool's `/memories/…` files, kept as entries of a MEMORY.md.

A memory file is an entry whose first line is its path; the lines after it are its content.
In MEMORY.md (under the section of the entry type, Notes by default) a file looks like:

    - /memories/progress.md
      # Progress
      - parser done; next: the index <!-- m-1a2b3c4d 2025-06-01 -->

so `memory.api.search`, `ctxmill memory list`, the MCP server and the hooks see what the tool
writes, and a person edits it like any entry. Directories are implied: one exists while a file
lies below it. The entry's date is the day the file was last written (recency decay follows it).

What must hold:
- every path stored is canonical (see `canonical`): `/memories` and names below it, none empty,
  `.` or `..` (also after NFKC folding), no percent-escape, control or format character,
  backslash, or secret. Paths only ever name entries, never files on disk.
- content is redacted (ground.redact) and normalized (memory.markdown.normalize_text) before it
  is stored; `Files.content` returns exactly what is stored.
- a change reads, edits and replaces the one MEMORY.md under its lock (memory.api.lock), written
  atomically; a change that raises (a refused path, a file over `Limits.file_bytes`, all files
  over `Limits.total_bytes`) writes nothing.
- entries that are not memory files are never changed. Of two entries with the same path the
  first in the file is the file (`delete` removes both).
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import NamedTuple

import regex
import xxhash

from ground.files import atomic_write
from memory import api
from memory.config import MemoryConfig
from memory.entry import SCOPES, TYPES, Entry, new_id, now
from memory.markdown import MemoryDocument, decode, encode, normalize_text, parse
from memory.reading import read_file

ROOT = "/memories"
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})  # controls, invisible format marks, line breaks
_ESCAPE = regex.compile(r"%[0-9A-Fa-f]{2}")


class FileError(ValueError):
    """A refused path or change. The message is written for the model that asked."""


@dataclass(frozen=True)
class Limits:
    file_bytes: int = 64 * 1024  # one file's stored content, UTF-8
    total_bytes: int = 1024 * 1024  # all memory files of the MEMORY.md together


class Stored(NamedTuple):
    content: str
    redacted: bool  # secret-like text was replaced by [REDACTED:<kind>]


def canonical(path: object) -> str:
    """The one spelling of a memory path (`/memories/a/b`, an empty name or a trailing `/`
    dropped), or FileError when the path is not one."""
    if not isinstance(path, str):
        raise FileError(f"Path must be a string, got: {path!r}")
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise FileError(f"Path must start with {ROOT}, got: {path}")
    if len(path) > MAX_PATH_CHARS:
        raise FileError(f"Path is longer than {MAX_PATH_CHARS} characters")
    bad = next((ch for ch in path if ch == "\\" or unicodedata.category(ch) in _REFUSED_CATEGORIES), None)
    if bad is not None:
        raise FileError(f"Path {path!r} contains {bad!r}: use plain characters and '/'")
    if _ESCAPE.search(path):
        raise FileError(f"Path {path} contains a percent-escape: write the characters themselves")
    names = [name for name in path[len(ROOT):].split("/") if name]
    for name in names:
        folded = unicodedata.normalize("NFKC", name)
        if folded in (".", "..") or "/" in folded or "\\" in folded:
            raise FileError(f"Path {path} would escape {ROOT} directory: no '.' or '..' names")
        if name != name.strip():
            raise FileError(f"Path {path}: a name may not begin or end with white space")
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            raise FileError(f"Path {path}: a name may not be longer than {MAX_NAME_BYTES} bytes")
    return "/".join([ROOT, *names])


def file_path(entry: Entry) -> str | None:
    """The path of the memory file an entry holds, None when it holds none."""
    if not entry.text.startswith(ROOT + "/"):
        return None
    first = entry.text.partition("\n")[0]
    try:
        return first if canonical(first) == first else None
    except FileError:
        return None


def _content(entry: Entry) -> str:
    return entry.text.partition("\n")[2]


def _below(path: str, candidate: str) -> bool:
    return candidate.startswith(path + "/")


class Files:
    """The memory files of one parsed MEMORY.md; the changing methods work only inside
    `MemoryFiles.change` (which writes the document back)."""

    def __init__(self, doc: MemoryDocument, owner: MemoryFiles, editable: bool):
        self.doc, self._owner, self._editable = doc, owner, editable
        self.changed = False
        self.touched: set[str] = set()  # ids of the entries a change added, replaced or removed
        self.entries: dict[str, Entry] = {}  # path -> entry, file order
        for entry in doc.entries():
            path = file_path(entry)
            if path is not None:
                self.entries.setdefault(path, entry)

    def content(self, path: str) -> str | None:
        entry = self.entries.get(path)
        return None if entry is None else _content(entry)

    def size(self, path: str) -> int:
        """Bytes of the file at `path`, or of all files below it."""
        if path in self.entries:
            return len(_content(self.entries[path]).encode("utf-8"))
        return sum(self.size(p) for p in self.below(path))

    def below(self, path: str) -> list[str]:
        """Paths of the files below directory `path` (at any depth), sorted."""
        return sorted(p for p in self.entries if _below(path, p))

    def is_dir(self, path: str) -> bool:
        return path == ROOT or any(_below(path, p) for p in self.entries)

    def write(self, path: str, content: str) -> Stored:
        """Create or replace the file at canonical `path`; returns what was stored."""
        self._check_editable()
        limits = self._owner.limits
        if len(content) > limits.file_bytes:  # characters never outnumber bytes: refuse before redacting
            raise self._too_big(path, len(content.encode("utf-8", "surrogatepass")))
        if path not in self.entries:
            self._check_new(path)
        redacted = self._owner.redact(content)
        text = normalize_text(path + "\n" + redacted)
        stored = text.partition("\n")[2]
        size = len(stored.encode("utf-8"))
        if size > limits.file_bytes:
            raise self._too_big(path, size)
        total = self.size(ROOT) - (self.size(path) if path in self.entries else 0) + size
        if total > limits.total_bytes:
            raise FileError(f"Memory files would hold {total:,} bytes, more than the {limits.total_bytes:,} allowed; "
                            "nothing was written. Delete or shorten files first.")
        today = date.today().isoformat()
        old = self.entries.get(path)
        if old is not None:
            replaced = self.doc.replace_entry(old.id, old.replace(text=text, created=today))
            assert replaced is not None, "self.entries holds entries of self.doc"
            entry = replaced
        else:
            entry = self.doc.add(Entry(self._new_id(text), self._owner.entry_type, text, today))
        self.entries[path] = entry
        self.touched.add(entry.id)
        self.changed = True
        return Stored(stored, redacted != content)

    def delete(self, path: str) -> int:
        """Remove the file at `path`, or every file below it; returns how many entries went."""
        self._check_editable()
        doomed = [(e, p) for e in self.doc.entries() if (p := file_path(e)) is not None and (p == path or _below(path, p))]
        for entry, entry_path in doomed:
            self.doc.remove(entry.id)
            self.entries.pop(entry_path, None)
            self.touched.add(entry.id)
        self.changed |= bool(doomed)
        return len(doomed)

    def move(self, old: str, new: str) -> None:
        """Give the file at `old`, or every file below it, the path with `new` in place of `old`.
        Ids, dates, pins and tags stay."""
        self._check_editable()
        if new == old or _below(old, new):
            raise FileError(f"Cannot move {old} into itself")
        self._check_new(new)
        moving = [old] if old in self.entries else self.below(old)
        for path in moving:
            target = canonical(new + path[len(old):])
            self._owner.check_no_secret(target)
            entry = self.entries.pop(path)
            moved = self.doc.replace_entry(entry.id, entry.replace(text=target + entry.text[len(path):]))
            assert moved is not None, "self.entries holds entries of self.doc"
            self.entries[target] = moved
            self.touched.add(entry.id)
        self.changed |= bool(moving)

    def _check_editable(self) -> None:
        if not self._editable:
            raise RuntimeError("memory files change only inside MemoryFiles.change()")

    def _check_new(self, path: str) -> None:
        """`path` may become a file: nothing is there, no parent is a file, it names no secret."""
        if path in self.entries or self.is_dir(path):
            raise FileError(f"{path} already exists")
        self._owner.check_no_secret(path)
        parent = path.rpartition("/")[0]
        while parent != ROOT and parent:
            if parent in self.entries:
                raise FileError(f"Cannot put {path} there: {parent} is a file, not a directory")
            parent = parent.rpartition("/")[0]

    def _new_id(self, text: str) -> str:
        taken = {e.id for e in self.doc.entries()}
        created, salt = now(), 0
        while (entry_id := new_id(text, created, salt)) in taken:
            salt += 1
        return entry_id

    def _too_big(self, path: str, size: int) -> FileError:
        return FileError(f"File {path} would hold {size:,} bytes, more than the {self._owner.limits.file_bytes:,} "
                         "allowed for one memory file; nothing was written.")


class MemoryFiles:
    """The memory files of the project's (or the global) MEMORY.md."""

    def __init__(self, cfg: MemoryConfig, scope: str = "project", entry_type: str = "note", limits: Limits = Limits()):
        if scope not in SCOPES:
            raise api.BadInput(f"unknown scope {scope!r} (use one of: {', '.join(SCOPES)})")
        if entry_type not in TYPES:
            raise api.BadInput(f"unknown type {entry_type!r} (use one of: {', '.join(TYPES)})")
        self.cfg, self.scope, self.entry_type, self.limits = cfg, scope, entry_type, limits
        self.path = (cfg.global_home if scope == "global" else cfg.project_home) / api.MEMORY_FILE
        self._guard = threading.Lock()  # one change or read of the cached document at a time in this process
        self._parsed: tuple[int, MemoryDocument] | None = None

    def read(self) -> Files:
        """The files as they are now (no file lock: MEMORY.md is only ever replaced whole)."""
        with self._guard:
            return Files(self._document()[2], self, editable=False)

    @contextmanager
    def change(self) -> Iterator[Files]:
        """Files to change; written back when the block ends without an exception, under the lock,
        and the search index takes the change (memory.api.index_written) as it does a `store`."""
        with self._guard, api.lock(self.path):
            before, digest, doc = self._document()
            self._parsed = None  # edited from here on; cached again once it matches the file
            files = Files(doc, self, editable=True)
            earlier = doc.entries()
            yield files
            if files.changed:
                data = encode(doc.text())
                atomic_write(self.path, data)
                digest = xxhash.xxh3_64_intdigest(data)
                old = [e for e in earlier if e.id in files.touched]
                new = [e for e in doc.entries() if e.id in files.touched]
                api.index_written(self.cfg, self.path, before, data, added=[e for e in new if e not in old],
                                  removed=list(dict.fromkeys(e for e in old if e not in new)))
            self._parsed = (digest, doc)

    def redact(self, text: str) -> str:
        from ground.redact import redact  # only writers pay for compiling the secret patterns

        return redact(text, self.cfg.redact_extra, self.cfg.redact_allow)

    def check_no_secret(self, path: str) -> None:
        if self.redact(path) != path:
            raise FileError(f"Path {path} looks like it contains a secret; choose another name")

    def _document(self) -> tuple[bytes, int, MemoryDocument]:
        """MEMORY.md's bytes, their hash and the parsed document; parsed again only when the bytes
        changed (a 10,000-entry file takes about half a second to parse)."""
        data = read_file(self.path)
        digest = xxhash.xxh3_64_intdigest(data)
        if self._parsed is None or self._parsed[0] != digest:
            self._parsed = (digest, parse(decode(data), self.scope, str(self.path)))
        return data, *self._parsed
