"""SQLite files as ctxmill's stores open them: private, autocommit, a busy timeout, write
transactions that take the write lock first, and writes tried again while another process holds
the lock.

Must hold: the folder is 0700 and the file is created 0600 before SQLite opens it (SQLite gives
its -wal and -shm files the database's mode); `immediate` commits on success and rolls back on any
exception, re-raising it; every SQLite error while a store is open reaches its caller as the
store's own `StoreError`, `busy` when only a lock held elsewhere stood in the way.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

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


class StoreError(Exception):
    """A store cannot be used (not a database, a newer schema, ...); `busy`: only because another
    process held a lock (`is_busy`), so trying again may succeed (`retrying`)."""

    def __init__(self, message: str, busy: bool = False) -> None:
        super().__init__(message)
        self.busy = busy


@contextlib.contextmanager
def opened(path: Path, busy_timeout_ms: int, prepare: Callable[[sqlite3.Connection, Path], None],
           error: type[StoreError]) -> Iterator[sqlite3.Connection]:
    """A private connection to `path` made ready by `prepare` (WAL, schema), closed when the block
    ends; any SQLite error on the way, or raised in the block, becomes `error`."""
    try:
        conn = connect_private(path, busy_timeout_ms)
    except sqlite3.Error as exc:
        raise error(f"{path}: {exc}", busy=is_busy(exc)) from None
    try:
        prepare(conn, path)
        yield conn
    except sqlite3.DatabaseError as exc:
        raise error(f"{path}: {exc}", busy=is_busy(exc)) from None
    finally:
        conn.close()


WRITE_ATTEMPTS = 5
"""How many times `retrying` runs a write while another process holds the file's lock."""

T = TypeVar("T")


def retrying(write: Callable[[], T]) -> T:
    """`write()`, run again after a short random pause (longer each time) while it raises a busy
    `StoreError`, up to `WRITE_ATTEMPTS` runs; then, or on any other error, the error is raised.
    `write` must be safe to run twice (one transaction, or idempotent)."""
    import random
    import time

    for attempt in range(1, WRITE_ATTEMPTS):
        try:
            return write()
        except StoreError as exc:
            if not exc.busy:
                raise
        time.sleep(random.uniform(0.02, 0.1) * attempt)
    return write()


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
