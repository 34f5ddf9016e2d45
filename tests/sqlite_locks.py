"""Another process's lock on an SQLite store, for tests of writes that are tried again."""

from __future__ import annotations

import sqlite3
from pathlib import Path


class HeldLock:
    """An exclusive lock on the database at `path`, held by a connection of its own, and a stand-in
    for `time.sleep` (`pause`) that records each pause and releases the lock after
    `release_after` of them (never when None)."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.pauses: list[float] = []
        self.release_after: int | None = None

    def hold(self, release_after: int | None = None) -> HeldLock:
        self.pauses.clear()
        self.release_after = release_after
        self.conn.execute("BEGIN EXCLUSIVE")
        return self

    def pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        if len(self.pauses) == self.release_after:
            self.conn.execute("COMMIT")

    def release(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")
        self.conn.close()
