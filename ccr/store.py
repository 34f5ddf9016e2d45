"""The CCR store: originals of everything the compressor cut, addressed by content hash.

Storage is one SQLite database, `<dir>/ccr.sqlite3`, because the store needs exactly what
SQLite gives for free: atomic multi-row transactions (a whole request's originals commit or
none do), safe concurrent writers from several processes (WAL + busy_timeout; readers never
block), an index on last-access time for least-recently-used eviction, and size accounting
without listing files. A directory of one-file-per-key would need a lock for the size
budget, a scan of the directory to evict, and cannot commit a batch atomically.

What must hold: the interface's rules (`ccr.base`), and
- the directory is created 0700, the database file 0600 (SQLite gives its -wal and -shm
  files the database's mode); none of them is opened through a symbolic link.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import Timeout

from ccr.base import (
    DAY,
    REFRESH_EVERY,
    CCRError,
    Found,
    Lookup,
    OriginalsStore,
    Retention,
    Stats,
    encode,
    invalid_key_message,
)
from ccr.keys import is_valid_key
from ground.files import not_links, private_dir, private_file, private_lock

__all__ = ["DAY", "REFRESH_EVERY", "CCRError", "CCRStore", "Lookup", "Retention", "Stats", "db_path",
           "invalid_key_message"]

DB_NAME = "ccr.sqlite3"
_SCHEMA_VERSION = 1
_BUSY_TIMEOUT_MS = 10_000
_EVICT_CHUNK = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key      TEXT PRIMARY KEY,
    hint     TEXT,
    created  REAL NOT NULL,     -- when this text was (last) stored after being gone
    accessed REAL NOT NULL,     -- last put or get; drives TTL and LRU
    gone     REAL,              -- tombstones: when the body was dropped
    reason   TEXT,              -- tombstones: 'expired' | 'evicted'
    size     INTEGER NOT NULL,  -- stored body bytes, 0 for tombstones
    body     BLOB               -- UTF-8 text; NULL for tombstones
);
CREATE INDEX IF NOT EXISTS live_by_access ON entries(accessed) WHERE body IS NOT NULL;
CREATE INDEX IF NOT EXISTS tombstone_by_gone ON entries(gone) WHERE body IS NULL;
CREATE TABLE IF NOT EXISTS totals (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO totals VALUES ('live_bytes', 0);
CREATE TRIGGER IF NOT EXISTS size_on_insert AFTER INSERT ON entries BEGIN
    UPDATE totals SET value = value + NEW.size WHERE name = 'live_bytes';
END;
CREATE TRIGGER IF NOT EXISTS size_on_update AFTER UPDATE OF size ON entries BEGIN
    UPDATE totals SET value = value + NEW.size - OLD.size WHERE name = 'live_bytes';
END;
CREATE TRIGGER IF NOT EXISTS size_on_delete AFTER DELETE ON entries BEGIN
    UPDATE totals SET value = value - OLD.size WHERE name = 'live_bytes';
END;
"""

_UPSERT = """
INSERT INTO entries (key, hint, created, accessed, gone, reason, size, body)
VALUES (?, ?, ?, ?, NULL, NULL, ?, ?)
ON CONFLICT (key) DO UPDATE SET
    hint     = coalesce(excluded.hint, entries.hint),
    created  = CASE WHEN entries.body IS NULL THEN excluded.created ELSE entries.created END,
    accessed = excluded.accessed,
    gone = NULL, reason = NULL,
    size = excluded.size, body = excluded.body
"""

_TOMBSTONE = "UPDATE entries SET body = NULL, size = 0, gone = ?, reason = ?"


def _migrate(db: sqlite3.Connection) -> None:
    """Create the schema once (first opener; openers are serialized by a file lock)."""
    if db.execute("PRAGMA user_version").fetchone()[0] != _SCHEMA_VERSION:
        try:
            db.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {_SCHEMA_VERSION};COMMIT;")
        except sqlite3.Error:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise


def db_path(directory: Path) -> Path:
    """The database file of the store kept in `directory`."""
    return Path(directory) / DB_NAME


class CCRStore(OriginalsStore):
    """Hash-addressed store of original texts in one SQLite database (the embedded default).
    Share it across processes freely; within a process one instance may be used from several
    threads (calls are serialized)."""

    def __init__(
        self,
        path: Path | None,
        *,
        retention: Retention = Retention(),
        tombstone_seconds: float = 30 * DAY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`path` is the store directory (the face passes paths.ccr_dir(home)); None keeps
        the store in memory (tests)."""
        super().__init__(retention, tombstone_seconds, clock)
        self._lock = threading.RLock()
        self.path = ":memory:" if path is None else str(db_path(Path(path)))
        try:
            if path is None:
                self._db = self._connect()
            else:
                os.chmod(private_dir(Path(path)), 0o700)  # ours (private_dir refuses another's): made private
                # Switching a new database to WAL is not covered by busy_timeout: serialize
                # opening across processes so racing first users do not fail.
                with private_lock(Path(self.path + ".lock"), timeout=_BUSY_TIMEOUT_MS / 1000):
                    private_file(Path(self.path))
                    not_links(*(Path(self.path + s) for s in ("-wal", "-shm", "-journal")))  # SQLite follows them
                    self._db = self._connect()
        except (sqlite3.Error, OSError, Timeout) as exc:
            raise CCRError(f"cannot open the CCR store at {self.path}: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            _migrate(db)
        except sqlite3.Error:
            db.close()
            raise
        return db

    @classmethod
    def in_memory(cls, **options) -> CCRStore:
        return cls(None, **options)

    # ---------------------------------------------------------------- transactions

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE (take the write lock up front, waiting up to busy_timeout)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # also when COMMIT itself failed
                    self._db.execute("ROLLBACK")
                raise

    # ---------------------------------------------------------------- writes

    def _write(self, items: dict[str, tuple[str, str | None]]) -> None:
        encoded = [(key, hint, encode(text)) for key, (text, hint) in items.items()]
        try:
            with self._transaction() as db:
                now = self._clock()
                db.executemany(_UPSERT, [(k, h, now, now, len(b), b) for k, h, b in encoded])
                self._sweep(db, now)
        except sqlite3.Error as exc:
            raise CCRError(f"CCR commit of {len(encoded)} entries failed at {self.path}: {exc}") from exc

    def refresh(self, keys) -> float:
        now = self._clock()
        rows = [(now, k) for k in sorted(set(keys)) if is_valid_key(k)]
        if rows:
            try:
                with self._transaction() as db:
                    db.executemany("UPDATE entries SET accessed = max(accessed, ?) WHERE key = ? AND body IS NOT NULL",
                                   rows)
            except sqlite3.Error as exc:
                raise CCRError(f"CCR refresh of {len(rows)} keys failed at {self.path}: {exc}") from exc
        return now

    def _sweep(self, db: sqlite3.Connection, now: float) -> None:
        """Expire, evict least recently used until under max_bytes (never what this commit
        wrote: its entries were accessed `now`), prune old tombstones. Runs inside the write
        transaction; each step is an indexed range query."""
        db.execute(
            _TOMBSTONE + " WHERE body IS NOT NULL AND accessed < ?",
            (now, "expired", now - self.ttl_seconds),
        )
        while (excess := self._live_bytes(db) - self.max_bytes) > 0:
            victims = []
            for key, size in db.execute(
                "SELECT key, size FROM entries WHERE body IS NOT NULL AND accessed < ? ORDER BY accessed, key LIMIT ?",
                (now, _EVICT_CHUNK),
            ).fetchall():
                if excess <= 0:
                    break
                victims.append(key)
                excess -= size
            if not victims:
                break
            db.executemany(_TOMBSTONE + " WHERE key = ?", [(now, "evicted", k) for k in victims])
        db.execute(
            "DELETE FROM entries WHERE body IS NULL AND gone < ?",
            (now - self.tombstone_seconds,),
        )

    @staticmethod
    def _live_bytes(db: sqlite3.Connection) -> int:
        return db.execute("SELECT value FROM totals WHERE name = 'live_bytes'").fetchone()[0]

    # ---------------------------------------------------------------- reads

    def _lookup(self, key: str, now: float) -> Found | None:
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT hint, created, accessed, reason, body, gone FROM entries WHERE key = ?", (key,)
                ).fetchone()
                if row is not None and row[4] is not None and now - row[2] <= self.ttl_seconds:
                    self._db.execute(
                        "UPDATE entries SET accessed = max(accessed, ?) WHERE key = ?", (now, key)
                    )
        except sqlite3.Error as exc:
            raise CCRError(f"CCR read failed at {self.path}: {exc}") from exc
        return None if row is None else Found(row[4], row[0], row[1], row[2], row[3], row[5])

    def stats(self) -> Stats:
        with self._lock:
            entries, tombstones = self._db.execute(
                "SELECT count(body), count(*) - count(body) FROM entries"
            ).fetchone()
            return Stats(self.path, entries, tombstones, self._live_bytes(self._db), self.max_bytes, self.ttl_seconds)

    def close(self) -> None:
        with self._lock:
            self._db.close()
