"""The savings ledger: one SQLite file per user (`ctxmill.paths.ledger_file`), written by every face.

Must hold:
- Safe with many processes: WAL journal, a busy timeout, each write one transaction (a request's
  row and its per-stage rows commit together or not at all); the file and its folder are private
  (0600 / 0700).
- No secrets: rows hold numbers, model names, stage names, session ids (hashes or the client's
  own ids), project names (a folder's base name) and project ids (a hash of the folder's path).
- Survives restarts: nothing is kept in memory between calls; a newer schema than this code knows
  is refused (`LedgerError`), an older one is upgraded in place.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ground.sqlitedb import StoreError, create_schema, immediate, opened

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 10_000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL, day TEXT NOT NULL, face TEXT NOT NULL, session TEXT NOT NULL,
    project_id TEXT NOT NULL, project TEXT NOT NULL, model TEXT NOT NULL, priced_as TEXT NOT NULL,
    tokens_before INTEGER NOT NULL, tokens_after INTEGER NOT NULL,
    input INTEGER NOT NULL, cache_read INTEGER NOT NULL, cache_write INTEGER NOT NULL, output INTEGER NOT NULL,
    reported INTEGER NOT NULL, cost_without REAL NOT NULL, cost_with REAL NOT NULL);
CREATE INDEX IF NOT EXISTS requests_day ON requests(day);
CREATE INDEX IF NOT EXISTS requests_session ON requests(session);
CREATE TABLE IF NOT EXISTS stage_savings (
    request INTEGER NOT NULL REFERENCES requests(id), stage TEXT NOT NULL, tokens INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS expansions (
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, day TEXT NOT NULL, face TEXT NOT NULL,
    session TEXT NOT NULL, project_id TEXT NOT NULL, project TEXT NOT NULL, chars INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS expansions_day ON expansions(day);
"""


class LedgerError(StoreError):
    """The ledger file cannot be used (a newer schema, not a database); `busy`: only because
    another process held a lock, so trying again may succeed."""


@dataclass(frozen=True)
class Project:
    """A project as the ledger names it: an id (hash of its folder's path) and a display name."""

    id: str = ""
    name: str = ""


@dataclass(frozen=True)
class RequestRow:
    """One request a face sent (or compressed): what `Ledger.add_request` writes."""

    face: str
    session: str
    project: Project
    model: str
    priced_as: str
    tokens_before: int
    tokens_after: int
    cost_without: float
    cost_with: float
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    reported: bool = False
    """The token counts and costs come from the provider's usage report (else estimated)."""
    stages: Mapping[str, int] = field(default_factory=dict)
    """Tokens each stage removed (a stage that added tokens, such as a reminder, is negative)."""
    ts: float | None = None


def day_of(ts: float) -> str:
    """The local calendar day of a timestamp, as YYYY-MM-DD."""
    return time.strftime("%Y-%m-%d", time.localtime(ts))


class Ledger:
    """A connection to the ledger file; open one per use (`with Ledger.open(path) as ledger`)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    @contextlib.contextmanager
    def open(cls, path: Path) -> Iterator[Ledger]:
        with opened(path, BUSY_TIMEOUT_MS, _prepare, LedgerError) as conn:  # created 0600 before SQLite opens it
            yield cls(conn)

    def _transaction(self):
        return immediate(self.conn)

    def add_request(self, row: RequestRow) -> int:
        return self.add_requests([row])[0]

    def add_requests(self, rows: list[RequestRow]) -> list[int]:
        """Add `rows` in one transaction (all or none); their ids."""
        with self._transaction() as cur:
            return [self._insert(cur, row) for row in rows]

    @staticmethod
    def _insert(cur: sqlite3.Cursor, row: RequestRow) -> int:
        ts = time.time() if row.ts is None else row.ts
        cur.execute(
            "INSERT INTO requests (ts, day, face, session, project_id, project, model, priced_as, tokens_before,"
            " tokens_after, input, cache_read, cache_write, output, reported, cost_without, cost_with)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (ts, day_of(ts), row.face, row.session, row.project.id, row.project.name, row.model, row.priced_as,
             row.tokens_before, row.tokens_after, row.input, row.cache_read, row.cache_write, row.output,
             int(row.reported), row.cost_without, row.cost_with))
        request = cur.lastrowid
        cur.executemany("INSERT INTO stage_savings (request, stage, tokens) VALUES (?,?,?)",
                        [(request, stage, int(n)) for stage, n in row.stages.items() if n])
        return int(request or 0)

    def add_expansion(self, face: str, session: str, project: Project, chars: int, ts: float | None = None) -> None:
        ts = time.time() if ts is None else ts
        with self._transaction() as cur:
            cur.execute("INSERT INTO expansions (ts, day, face, session, project_id, project, chars)"
                        " VALUES (?,?,?,?,?,?,?)", (ts, day_of(ts), face, session, project.id, project.name, chars))

    def query(self, sql: str, params: tuple = ()) -> list[dict]:
        """Rows of a read-only query as dicts (column name -> value)."""
        cur = self.conn.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, values)) for values in cur.fetchall()]


def _prepare(conn: sqlite3.Connection, path: Path) -> None:
    """WAL and the schema (created or upgraded once, under a write lock)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise LedgerError(f"{path}: written by a newer ctxmill (schema {version}; this one reads {SCHEMA_VERSION})")
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    if version == SCHEMA_VERSION:
        return
    create_schema(conn, _SCHEMA, SCHEMA_VERSION)
