"""The files of a repository with their outlines, kept in SQLite so a map reads only what it needs.

`RepoIndex(db).refresh(root)` lists the files the map may name (`repomap.files`) and brings the
index up to date: a file whose size and mtime match its row is not read; a changed source file
(a grammar in `repomap.languages` reads it) is read (`repomap.files.read`: regular, inside the
repository, bounded) and hashed, and parsed only when no row holds its content hash yet; any
other file (docs, config, build files) is named by its path and never read. A file that cannot
be read safely, a bundle (`repomap.files.minified`) and a link out of the repository are left
out. Rows of vanished files go. Once every file is indexed, each file's `prior` is set (its
PageRank in the graph of what uses what, `repomap.graph`) and the index is marked complete; a
later refresh recomputes the priors only when more than 1% of the files changed or they are
older than 10 minutes (a few edited files barely move a repository's PageRank).
`refresh_files(root, names)` brings just those files up to date (the few a session just
touched), so a prompt never waits for the whole repository; with `parse=False` it reads none
of them either: a changed source file is marked stale (mtime -1) for the next refresh to read.

Beside each file's outline the index keeps its search terms (path and defined names,
`repomap.terms`) and the names it defines, inverted, so ranking a prompt reads the rows of the
prompt's terms only. `db=None` keeps the index in memory. Changes are written in transactions
of `BATCH` files (WAL): concurrent writers at worst parse a file twice, and a first index cut
short by a deadline goes on where it stopped next time.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

import xxhash

from ground.files import private_dir, private_file
from ground.records import Record
from repomap.files import list_files, minified, read, safe_stat, wanted
from repomap.languages import supported
from repomap.outline import Definition, Outline, outline
from repomap.terms import terms

SCHEMA_VERSION = 3
PRIORS_EVERY = 600.0
"""Seconds after which a refresh that found a change recomputes the priors whatever changed."""
PRIORS_CHANGED_SHARE = 0.01
BATCH = 100
"""Changed files indexed per transaction: an interrupted first index keeps what it did."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER, digest TEXT,
                                  ndefs INTEGER, ndefterms INTEGER, outline BLOB,
                                  prior REAL DEFAULT 0, log_prior REAL DEFAULT 0,
                                  log_size REAL DEFAULT 0);
CREATE INDEX IF NOT EXISTS files_digest ON files(digest);
CREATE INDEX IF NOT EXISTS files_rank ON files(path, log_prior, log_size);
CREATE TABLE IF NOT EXISTS terms (term TEXT, path TEXT, in_path INTEGER, in_defs INTEGER,
                                  ndefterms INTEGER);
CREATE INDEX IF NOT EXISTS terms_term ON terms(term);
CREATE INDEX IF NOT EXISTS terms_path ON terms(path);
CREATE TABLE IF NOT EXISTS names (name TEXT, path TEXT);
CREATE INDEX IF NOT EXISTS names_name ON names(name);
CREATE INDEX IF NOT EXISTS names_path ON names(path);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value REAL);
"""
_TABLES = ("files", "terms", "names", "meta")


class FileRow(Record):
    ndefs: int
    size: int
    prior: float
    """The file's PageRank times the number of files (1.0 is average; 0: nothing links to it)."""


def path_terms(path: str) -> set[str]:
    return terms(path.replace("/", " ").replace(".", " ").replace("-", " "))


class RepoIndex:
    """One repository's files, outlines and search terms (see the module docstring)."""

    def __init__(self, db: Path | None, lock_wait: float = 10.0) -> None:
        """`lock_wait`: seconds a write waits for another writer (a refresh) before
        `sqlite3.OperationalError`; reads never wait (WAL)."""
        if db is not None:
            private_file(
                private_dir(Path(db).parent) / Path(db).name
            )  # SQLite gives -wal/-shm its mode
        self.db = sqlite3.connect(
            str(db) if db is not None else ":memory:", timeout=lock_wait, isolation_level=None
        )
        if db is not None:
            self.db.execute("PRAGMA journal_mode=WAL")
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            self.db.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in _TABLES))
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    def meta(self, key: str) -> float | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else float(row[0])

    def set_meta(self, key: str, value: float) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    @property
    def complete(self) -> bool:
        return self.meta("complete") == 1.0

    def paths(self) -> set[str]:
        """Every indexed file's path (cheaper than `files` when the rows are not needed)."""
        return {p for (p,) in self.db.execute("SELECT path FROM files")}

    def prior_scores(
        self,
        weights: tuple[float, float],
        paths: Iterable[str] | None = None,
        best: int | None = None,
    ) -> dict[str, float]:
        """path -> `weights[0] x log(1 + prior) + weights[1] x log(1 + size in KB)` (the ranking's
        prior, `repomap.rank.prior`): of `paths`, or of the `best` files by it (highest first, ties
        by path, as the ranking orders them), or of every file."""
        value = "? * log_prior + ? * log_size"  # log(1 + prior), log(1 + size in KB), kept per row
        if paths is None:
            tail, extra = (
                (" ORDER BY round(v, 9) DESC, path LIMIT ?", (best,))
                if best is not None
                else ("", ())
            )
            return dict(
                self.db.execute(f"SELECT path, {value} AS v FROM files{tail}", (*weights, *extra))
            )
        names, out = sorted(set(paths)), dict[str, float]()
        for start in range(0, len(names), 500):
            chunk = names[start : start + 500]
            out.update(
                self.db.execute(
                    f"SELECT path, {value} FROM files WHERE path IN ({','.join('?' * len(chunk))})",
                    (*weights, *chunk),
                )
            )
        return out

    def files(self) -> dict[str, FileRow]:
        """Every indexed file: path -> its row."""
        return {
            p: FileRow(n, s, r)
            for p, n, s, r in self.db.execute("SELECT path, ndefs, size, prior FROM files")
        }

    def refresh(self, root: Path, deadline: float | None = None) -> dict[str, FileRow] | None:
        """Bring the index up to date with the files under `root`; their rows. With a `deadline`
        (a `time.monotonic()` value), reading stops there, what was indexed is kept (committed
        in batches), and None says the index is not complete yet."""
        self.set_meta("started", time.time())
        names = list_files(Path(root))
        known = self._known()
        changed = self._changed(Path(root), names, known)
        gone = set(known) - set(names)
        if gone:
            self._write([], gone)
        if not self._index(Path(root), changed, known, deadline):
            self.set_meta("complete", 0.0)
            return None
        if not self.complete or self._priors_due(len(changed) + len(gone), len(names)):
            from repomap.graph import file_priors

            self._set_priors(file_priors(self))
            self.set_meta("mean_def_terms", self._mean_def_terms())
            self.set_meta("priors_at", time.time())
        self.set_meta("complete", 1.0)
        return self.files()

    def _priors_due(self, changed: int, files: int) -> bool:
        """Whether a refresh that found `changed` of `files` files changed recomputes the priors:
        a PageRank over the whole repository moves little when a few files change, so only when
        more than `PRIORS_CHANGED_SHARE` of them did, or they are older than `PRIORS_EVERY`."""
        at = self.meta("priors_at")
        return changed > 0 and (
            changed > PRIORS_CHANGED_SHARE * files or at is None or time.time() - at > PRIORS_EVERY
        )

    def refresh_files(self, root: Path, names: list[str], parse: bool = True) -> list[str]:
        """Bring the rows of `names` (repository-relative) up to date, adding or dropping them.
        `parse=False` (a prompt, which must not wait for a parser to load): a changed or new file
        that a grammar reads is not read now; its row is kept as it was (a new file's is added by
        path) and marked stale, so the next refresh reads it. Returns the names left stale."""
        names = [n for n in dict.fromkeys(names) if wanted(n)]
        if not names:
            return []
        known = self._known(names)
        changed = self._changed(Path(root), names, known)
        gone = {n for n in names if n in known and safe_stat(Path(root), n) is None}
        if gone:
            self._write([], gone)
        later = [] if parse else [(n, st) for n, st in changed if supported(n)]
        self._index(Path(root), [c for c in changed if c not in later], known, None)
        if later:
            self._write([(n, st, b"") for n, st in later if n not in known], set())
            self.db.executemany(
                "UPDATE files SET mtime = -1 WHERE path = ?", [(n,) for n, _ in later]
            )
        return [n for n, _ in later]

    def changed(self, root: Path, names: list[str]) -> list[str]:
        """Those of `names` whose file differs from its row (or has none), read without writing:
        what `refresh_files` would bring up to date."""
        names = [n for n in dict.fromkeys(names) if wanted(n)]
        return [n for n, _ in self._changed(Path(root), names, self._known(names))] if names else []

    def _known(self, names: list[str] | None = None) -> dict[str, tuple[int, int]]:
        """path -> (size, mtime) of every row, or of those of `names`."""
        if names is None:
            return {
                p: (size, mtime)
                for p, size, mtime in self.db.execute("SELECT path, size, mtime FROM files")
            }
        out: dict[str, tuple[int, int]] = {}
        for start in range(0, len(names), 500):
            chunk = names[start : start + 500]
            out.update(
                (p, (size, mtime))
                for p, size, mtime in self.db.execute(
                    "SELECT path, size, mtime FROM files WHERE path IN"
                    f" ({','.join('?' * len(chunk))})",
                    chunk,
                )
            )
        return out

    @staticmethod
    def _changed(
        root: Path, names: list[str], known: dict[str, tuple[int, int]]
    ) -> list[tuple[str, os.stat_result]]:
        out = []
        for name in names:
            st = safe_stat(root, name)
            if st is not None and known.get(name) != (st.st_size, st.st_mtime_ns):
                out.append((name, st))
        return out

    def _index(
        self,
        root: Path,
        changed: list[tuple[str, os.stat_result]],
        known: dict,
        deadline: float | None,
    ) -> bool:
        """Index the `changed` files in batches; False when `deadline` passed first."""
        for start in range(0, len(changed), BATCH):
            if deadline is not None and time.monotonic() > deadline:
                return False
            batch = []
            for name, st in changed[start : start + BATCH]:
                content = read(root, name) if supported(name) else b""
                if content is not None and not (content and minified(content)):
                    batch.append((name, st, content))
            self._write(batch, set(known) & {name for name, _ in changed[start : start + BATCH]})
        return True

    def _write(self, changed: list[tuple[str, os.stat_result, bytes]], stale: set[str]) -> None:
        """Drop the rows of `stale` paths, index the `changed` files (b"": named by path only)."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            for name in stale:
                for table in ("files", "terms", "names"):
                    db.execute(f"DELETE FROM {table} WHERE path = ?", (name,))
            for name, st, content in changed:
                digest = xxhash.xxh3_64_hexdigest(content) if content else ""
                same = (
                    db.execute(
                        "SELECT outline FROM files WHERE digest = ? LIMIT 1", (digest,)
                    ).fetchone()
                    if digest
                    else None
                )
                o = (
                    _decode(same[0])
                    if same
                    else outline(name, content)
                    if content
                    else Outline((), ())
                )
                in_path = path_terms(name)
                in_defs = terms(" ".join(d.name for d in o.defs))
                db.execute(
                    "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, ?)",
                    (
                        name,
                        st.st_size,
                        st.st_mtime_ns,
                        digest,
                        len(o.defs),
                        len(in_defs),
                        _encode(o),
                        math.log1p(st.st_size / 1024),
                    ),
                )
                db.executemany(
                    "INSERT INTO terms VALUES (?, ?, ?, ?, ?)",
                    [
                        (t, name, t in in_path, t in in_defs, len(in_defs))
                        for t in sorted(in_path | in_defs)
                    ],
                )
                db.executemany(
                    "INSERT INTO names VALUES (?, ?)",
                    [(n, name) for n in sorted({d.name for d in o.defs})],
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _set_priors(self, priors: dict[str, float]) -> None:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("UPDATE files SET prior = 0, log_prior = 0")
            db.executemany(
                "UPDATE files SET prior = ?, log_prior = ? WHERE path = ?",
                [(v, math.log1p(v), p) for p, v in sorted(priors.items())],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def matches(self, wanted_terms: set[str]) -> list[tuple[str, str, int, int, int]]:
        """(term, path, in its path (1/0), in its defined names (1/0), how many terms its names
        hold) for every file holding one of `wanted_terms`."""
        if not wanted_terms:
            return []
        marks = ",".join("?" * len(wanted_terms))
        return self.db.execute(
            f"SELECT term, path, in_path, in_defs, ndefterms FROM terms WHERE term IN ({marks})"
            " ORDER BY term, path",
            sorted(wanted_terms),
        ).fetchall()

    def mean_def_terms(self) -> float:
        """The mean number of terms the names of a file that defines something hold (as of the
        last full refresh, when there was one)."""
        kept = self.meta("mean_def_terms")
        return kept if kept is not None else self._mean_def_terms()

    def _mean_def_terms(self) -> float:
        return float(
            self.db.execute("SELECT avg(ndefterms) FROM files WHERE ndefs > 0").fetchone()[0] or 1.0
        )

    def outline(self, path: str) -> Outline:
        row = self.db.execute("SELECT outline FROM files WHERE path = ?", (path,)).fetchone()
        return _decode(row[0]) if row else Outline((), ())

    def outlines(self):
        """(path, outline) of every file that defines something, by path."""
        for path, blob in self.db.execute(
            "SELECT path, outline FROM files WHERE ndefs > 0 ORDER BY path"
        ):
            yield path, _decode(blob)

    def definers(self, names: list[str]) -> dict[str, list[str]]:
        """name -> the files that define it, for each of `names` defined somewhere."""
        out: dict[str, list[str]] = {}
        for start in range(0, len(names), 500):
            chunk = names[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for name, path in self.db.execute(
                f"SELECT name, path FROM names WHERE name IN ({marks}) ORDER BY name, path", chunk
            ):
                out.setdefault(name, []).append(path)
        return out

    def all_definers(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, path in self.db.execute("SELECT name, path FROM names ORDER BY name, path"):
            out.setdefault(name, []).append(path)
        return out


def _encode(o: Outline) -> bytes:
    import orjson  # here: a prompt decodes outlines (`_decode`) without orjson, which imports dataclasses

    return orjson.dumps(
        [[[d.kind, d.name, d.signature, d.line, d.depth] for d in o.defs], list(o.refs)]
    )


def _decode(blob: bytes) -> Outline:
    """The outline `_encode` wrote, read with the stdlib's JSON (the hook's process has it loaded)."""
    defs, refs = json.loads(blob)
    return Outline(tuple(Definition(*d) for d in defs), tuple(refs))
