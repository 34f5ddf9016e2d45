"""SQLite files as ctxmill's stores open them: private, autocommit, a busy timeout, and write
transactions that take the write lock first.

Must hold: the folder is 0700 and the file is created 0600 before SQLite opens it (SQLite gives
its -wal and -shm files the database's mode); `immediate` commits on success and rolls back on any
exception, re-raising it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Iterator

from ground.files import private_dir


def connect_private(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """A connection to the database at `path` (sqlite3.Error when it cannot open)."""
    private_dir(path.parent)
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    conn = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
    return conn


def is_busy(exc: BaseException) -> bool:
    """Whether `exc` is SQLite saying another connection holds a lock (SQLITE_BUSY or
    SQLITE_LOCKED, any extended code). Under contention SQLite sometimes gives up on a WAL
    database at once, busy timeout or not (8 writers on a loaded machine), so the write is worth
    trying again."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.OperationalError) and code is not None and code & 0xFF in (
        sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Cursor]:
    """One write transaction (`BEGIN IMMEDIATE`): committed when the block ends, rolled back when it raises."""
    cur = conn.cursor()
    cur.execute("BEGIN IMMEDIATE")
    try:
        yield cur
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    cur.execute("COMMIT")


def create_schema(conn: sqlite3.Connection, schema: str, version: int) -> None:
    """Run `schema` (statements separated by `;`) and set `PRAGMA user_version` to `version`, in
    one write transaction, unless another process already did."""
    with immediate(conn):
        if conn.execute("PRAGMA user_version").fetchone()[0] < version:
            for statement in filter(str.strip, schema.split(";")):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version}")
