"""The outlines of a repository's files, kept in SQLite so a warm map reads only what it needs.

`RepoIndex(db).refresh(root)` lists the repository's source files (`git ls-files` of tracked
and untracked, not ignored files when `root` is in a git work tree; else a walk that skips
dependency and build folders) and brings the index up to date: a file whose size and mtime
match its row is not read; one that changed is read and hashed, and parsed only when no row
holds its content hash yet. Rows of vanished files go. Unreadable files and files over
`MAX_FILE_BYTES` are left out. Beside each file's outline the index keeps its search terms
(path and defined names, `repomap.rank.terms`) and the names it defines, inverted, so ranking
a prompt reads the rows of the prompt's terms only. `db=None` keeps the index in memory.
Changes are written in transactions of `BATCH` files (WAL): concurrent prompts at worst parse a
file twice, and a first index cut short by a deadline goes on where it stopped next time.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from pathlib import Path

import orjson
import xxhash

from ground.files import private_dir, private_file
from repomap.languages import supported
from repomap.outline import Definition, Outline, outline
from repomap.terms import terms

SCHEMA_VERSION = 1
MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 20_000
BATCH = 100
"""Changed files indexed per transaction: an interrupted first index keeps what it did."""
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".ctxmill", "node_modules", ".venv", "venv", "__pycache__",
                       "dist", "build", "target", ".tox", ".mypy_cache", ".next", "vendor"})
_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER, digest TEXT,
                                  ndefs INTEGER, ndefterms INTEGER, outline BLOB);
CREATE INDEX IF NOT EXISTS files_digest ON files(digest);
CREATE TABLE IF NOT EXISTS terms (term TEXT, path TEXT, in_path INTEGER, in_defs INTEGER);
CREATE INDEX IF NOT EXISTS terms_term ON terms(term);
CREATE INDEX IF NOT EXISTS terms_path ON terms(path);
CREATE TABLE IF NOT EXISTS names (name TEXT, path TEXT);
CREATE INDEX IF NOT EXISTS names_name ON names(name);
CREATE INDEX IF NOT EXISTS names_path ON names(path);
"""


def list_files(root: Path) -> list[str]:
    """Repository-relative paths of the source files under `root`, sorted, at most MAX_FILES."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"],
                             capture_output=True, timeout=20, check=True).stdout
        names = [n for n in out.decode("utf-8", "surrogateescape").split("\0") if n]
    except (OSError, subprocess.SubprocessError):
        names = _walk(root)
    return sorted(n for n in names if supported(n) and not SKIP_DIRS.intersection(n.split("/")[:-1]))[:MAX_FILES]


def _walk(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        rel = os.path.relpath(folder, root)
        found.extend(f if rel == "." else f"{rel}/{f}" for f in files)
        if len(found) > MAX_FILES * 4:
            break
    return found


def path_terms(path: str) -> set[str]:
    return terms(path.replace("/", " ").replace(".", " ").replace("-", " "))


class RepoIndex:
    """One repository's outlines and search terms (see the module docstring)."""

    def __init__(self, db: Path | None) -> None:
        if db is not None:
            private_file(private_dir(Path(db).parent) / Path(db).name)  # SQLite gives -wal/-shm its mode
        self.db = sqlite3.connect(str(db) if db is not None else ":memory:", timeout=10, isolation_level=None)
        if db is not None:
            self.db.execute("PRAGMA journal_mode=WAL")
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            self.db.executescript("DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS terms; DROP TABLE IF EXISTS names;")
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    def refresh(self, root: Path, deadline: float | None = None) -> dict[str, int] | None:
        """Bring the index up to date with the files under `root`; path -> number of definitions.
        With a `deadline` (a `time.monotonic()` value), parsing stops there, what was parsed is
        kept (committed in batches), and None says the index is not complete yet."""
        base = str(root).rstrip("/") + "/"
        known = {p: (size, mtime, ndefs) for p, size, mtime, ndefs in self.db.execute(
            "SELECT path, size, mtime, ndefs FROM files")}
        current: dict[str, int] = {}
        changed: list[tuple[str, os.stat_result, bytes]] = []
        for name in list_files(Path(root)):
            try:
                st = os.stat(base + name)
            except OSError:
                continue
            if st.st_size > MAX_FILE_BYTES:
                continue
            row = known.get(name)
            if row is None or row[0] != st.st_size or row[1] != st.st_mtime_ns:
                try:
                    with open(base + name, "rb") as f:
                        changed.append((name, st, f.read()))
                except OSError:
                    continue
            else:
                current[name] = row[2]
        gone = set(known) - set(current) - {c[0] for c in changed}
        if gone:
            self._write([], gone)
        for start in range(0, len(changed), BATCH):
            if deadline is not None and time.monotonic() > deadline:
                return None
            batch = changed[start:start + BATCH]
            current.update(self._write(batch, set(known) & {c[0] for c in batch}))
        return current

    def _write(self, changed: list[tuple[str, os.stat_result, bytes]], stale: set[str]) -> dict[str, int]:
        """Drop the rows of `stale` paths, index the `changed` files; path -> definitions of each."""
        db = self.db
        counts: dict[str, int] = {}
        db.execute("BEGIN IMMEDIATE")
        try:
            for name in stale:
                for table in ("files", "terms", "names"):
                    db.execute(f"DELETE FROM {table} WHERE path = ?", (name,))
            for name, st, content in changed:
                digest = xxhash.xxh3_64_hexdigest(content)
                same = db.execute("SELECT outline FROM files WHERE digest = ? LIMIT 1", (digest,)).fetchone()
                o = _decode(same[0]) if same else outline(name, content)
                in_path = path_terms(name)
                in_defs = terms(" ".join(d.name for d in o.defs))
                db.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (name, st.st_size, st.st_mtime_ns, digest, len(o.defs), len(in_defs), _encode(o)))
                db.executemany("INSERT INTO terms VALUES (?, ?, ?, ?)",
                               [(t, name, t in in_path, t in in_defs) for t in sorted(in_path | in_defs)])
                db.executemany("INSERT INTO names VALUES (?, ?)", [(n, name) for n in sorted({d.name for d in o.defs})])
                counts[name] = len(o.defs)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return counts

    def matches(self, wanted: set[str]) -> list[tuple[str, str, bool, bool, int]]:
        """(term, path, in its path, in its defined names, how many terms its names hold) for
        every file holding one of `wanted`."""
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        return [(t, p, bool(a), bool(b), n) for t, p, a, b, n in self.db.execute(
            f"SELECT t.term, t.path, t.in_path, t.in_defs, f.ndefterms FROM terms t JOIN files f ON f.path = t.path "
            f"WHERE t.term IN ({marks}) ORDER BY t.term, t.path", sorted(wanted))]

    def mean_def_terms(self) -> float:
        return float(self.db.execute("SELECT avg(ndefterms) FROM files").fetchone()[0] or 1.0)

    def outline(self, path: str) -> Outline:
        row = self.db.execute("SELECT outline FROM files WHERE path = ?", (path,)).fetchone()
        return _decode(row[0]) if row else Outline((), ())

    def definers(self, names: list[str]) -> dict[str, list[str]]:
        """name -> the files that define it, for each of `names` defined somewhere."""
        out: dict[str, list[str]] = {}
        for start in range(0, len(names), 500):
            chunk = names[start:start + 500]
            for name, path in self.db.execute(
                    f"SELECT name, path FROM names WHERE name IN ({','.join('?' * len(chunk))}) ORDER BY name, path", chunk):
                out.setdefault(name, []).append(path)
        return out


def _encode(o: Outline) -> bytes:
    return orjson.dumps([[[d.kind, d.name, d.signature, d.line, d.depth] for d in o.defs], list(o.refs)])


def _decode(blob: bytes) -> Outline:
    defs, refs = orjson.loads(blob)
    return Outline(tuple(Definition(*d) for d in defs), tuple(refs))
