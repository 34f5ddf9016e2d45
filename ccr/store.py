"""The CCR store: originals of everything the compressor cut, addressed by content hash.

Storage is one SQLite database, `<dir>/ccr.sqlite3`, because the store needs exactly what
SQLite gives for free: atomic multi-row transactions (a whole request's originals commit or
none do), safe concurrent writers from several processes (WAL + busy_timeout; readers never
block), an index on last-access time for least-recently-used eviction, and size accounting
without listing files. A directory of one-file-per-key would need a lock for the size
budget, a scan of the directory to evict, and cannot commit a batch atomically.

What must hold:
- `put` is idempotent: identical text gives the identical key and one row.
- Inside `batch()` puts are buffered and written in ONE short transaction on exit; if that
  commit fails, `batch()` raises CCRError and nothing is stored (the caller fails open).
- `get` never raises for a bad, unknown or expired key: it returns a Lookup whose
  `message` says in one line what happened and, when known, what to re-run.
- An entry lives `ttl_seconds` after its last put, get or `refresh` (a session refreshes the
  keys its requests still name, at most every REFRESH_EVERY of the TTL); the live payload stays
  under `max_bytes` by evicting the least recently used entries first, never those the same
  commit wrote (a batch larger than `max_bytes` is kept whole, until a later commit). Expired
  and evicted entries leave a tombstone (key, hint, times, reason) for `tombstone_seconds`.
- The directory is created 0700, the database file 0600 (SQLite gives its -wal and -shm
  files the database's mode); none of them is opened through a symbolic link.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from filelock import Timeout

from ccr.keys import is_valid_key, make_key
from ground.files import not_links, private_dir, private_file, private_lock

DB_NAME = "ccr.sqlite3"
DAY = 86400.0
_HINT_MAX = 300
_SCHEMA_VERSION = 1
_BUSY_TIMEOUT_MS = 10_000
_EVICT_CHUNK = 256
REFRESH_EVERY = 0.25
"""A caller's refresh writes at most once per this fraction of the TTL."""

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


@dataclass(frozen=True)
class Retention:
    """How long and how much the store keeps (config.toml `[ccr]`: `ttl_hours`, `max_mb`)."""

    ttl_seconds: float = DAY
    """An entry lives this long after its last put, get or refresh."""
    max_bytes: int = 512 * 2**20
    """Live payload cap; the least recently used entries are evicted beyond it."""


class CCRError(Exception):
    """The store could not be opened or a write could not be committed."""


@dataclass(frozen=True)
class Lookup:
    """Result of CCRStore.get. `text` is set only when status == "ok"; `message` otherwise."""

    key: str
    status: str  # "ok" | "expired" | "missing" | "invalid"
    text: str | None
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Stats:
    path: str
    entries: int
    tombstones: int
    live_bytes: int
    max_bytes: int
    ttl_seconds: float


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


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _decode(body: bytes) -> str:
    return body.decode("utf-8", "surrogatepass")


def _clean_hint(hint: str | None) -> str | None:
    """One printable line (it goes into one-line messages), at most _HINT_MAX chars."""
    if hint is None:
        return None
    line = " ".join(hint.encode("utf-8", "replace").decode("utf-8").split())
    return line[:_HINT_MAX] or None


def _span(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 72 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / DAY:.0f} d"


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


class CCRStore:
    """Hash-addressed store of original texts. Share it across processes freely; within a
    process one instance may be used from several threads (calls are serialized)."""

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
        self.ttl_seconds = retention.ttl_seconds
        self.max_bytes = retention.max_bytes
        self.tombstone_seconds = tombstone_seconds
        self._clock = clock
        self._lock = threading.RLock()
        self._local = threading.local()
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

    def put(self, text: str, hint: str | None = None) -> str:
        """Store `text` (idempotent) and return its key. `hint` says what to re-run to get
        the text again once it is gone, e.g. "re-run the tool call `cat src/x.py`".
        Outside batch() the write is committed before returning; raises CCRError if not."""
        key = make_key(text)
        pending = getattr(self._local, "pending", None)
        if pending is not None:
            earlier = pending.get(key)
            pending[key] = (text, _clean_hint(hint) or (earlier[1] if earlier else None))
        else:
            self._write({key: (text, _clean_hint(hint))})
        return key

    @contextmanager
    def batch(self) -> Iterator[CCRStore]:
        """Buffer puts and commit them in one transaction on exit. Raises CCRError when the
        commit fails; an exception inside the block discards the buffered puts. Nested
        batches join the outermost one."""
        if getattr(self._local, "pending", None) is not None:
            yield self
            return
        self._local.pending = {}
        try:
            yield self
            pending = self._local.pending
        finally:
            self._local.pending = None
        if pending:
            self._write(pending)

    def _write(self, items: dict[str, tuple[str, str | None]]) -> None:
        encoded = [(key, hint, _encode(text)) for key, (text, hint) in items.items()]
        try:
            with self._transaction() as db:
                now = self._clock()
                db.executemany(_UPSERT, [(k, h, now, now, len(b), b) for k, h, b in encoded])
                self._sweep(db, now)
        except sqlite3.Error as exc:
            raise CCRError(f"CCR commit of {len(encoded)} entries failed at {self.path}: {exc}") from exc

    def refresh_due(self, since: float) -> bool:
        """Whether a caller that last refreshed at `since` should refresh again now."""
        return self._clock() - since >= self.ttl_seconds * REFRESH_EVERY

    def refresh(self, keys) -> float:
        """A full TTL from now for the live entries among `keys` (the markers a session still
        sends), in one transaction; returns the time of the refresh. Raises CCRError."""
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

    def get(self, key: str) -> Lookup:
        """The original text for `key`, refreshing its TTL; or a one-line reason why not."""
        if not is_valid_key(key):
            return Lookup(str(key), "invalid", None, invalid_key_message(key))
        pending = getattr(self._local, "pending", None)
        if pending is not None and key in pending:
            return Lookup(key, "ok", pending[key][0], "")
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT hint, created, accessed, reason, body, gone FROM entries WHERE key = ?", (key,)
                ).fetchone()
                now = self._clock()
                if row is not None and row[4] is not None and now - row[2] <= self.ttl_seconds:
                    self._db.execute(
                        "UPDATE entries SET accessed = max(accessed, ?) WHERE key = ?", (now, key)
                    )
                    return Lookup(key, "ok", _decode(row[4]), "")
        except sqlite3.Error as exc:
            raise CCRError(f"CCR read failed at {self.path}: {exc}") from exc
        if row is None:
            return Lookup(key, "missing", None, _missing_message(key, self.tombstone_seconds))
        hint, created, accessed, reason, _, gone = row
        # kept unused this long: by whoever dropped it (a tombstone), else under this store's TTL
        unused = self.ttl_seconds if gone is None else gone - accessed
        return Lookup(key, "expired", None, self._gone_message(key, hint, created, reason, now, unused))

    def _gone_message(self, key: str, hint: str | None, created: float, reason: str | None, now: float,
                      unused: float) -> str:
        if reason == "evicted":
            what = f"was evicted to keep the store under {_mib(self.max_bytes)} (stored {_span(now - created)} ago)"
        else:
            what = f"has expired (stored {_span(now - created)} ago, kept {_span(unused)})"
        again = f"{hint} to see it again" if hint else "the original text is no longer available"
        return f'ctxmill: deep_expand("{key}") {what}; {again}'

    def stats(self) -> Stats:
        with self._lock:
            entries, tombstones = self._db.execute(
                "SELECT count(body), count(*) - count(body) FROM entries"
            ).fetchone()
            return Stats(self.path, entries, tombstones, self._live_bytes(self._db), self.max_bytes, self.ttl_seconds)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> CCRStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def invalid_key_message(key: object) -> str:
    shown = repr(key)[:48] if isinstance(key, str) else type(key).__name__
    return f"ctxmill: deep_expand({shown}) is not a CCR key (expected 32 lowercase hex characters)"


def _missing_message(key: str, tombstone_seconds: float) -> str:
    return (
        f'ctxmill: deep_expand("{key}") is not in this store '
        f"(never stored here, or gone for more than {_span(tombstone_seconds)})"
    )
