"""The history store: one SQLite file per user (`HistoryConfig.path`), FTS5 over memory's terms.

Must hold:
- Private: the folder 0700, the database (and SQLite's WAL and shared-memory files, which take
  its mode) 0600; every text went through redaction before it reaches `ingest` (`messages.rows_of`).
- Safe with many processes: WAL journal, a busy timeout, each ingest one `BEGIN IMMEDIATE`
  transaction (a session's rows change together or not at all); a lock held elsewhere raises a
  `HistoryError` whose `busy` is true (`ingest` tries such writes again).
- Incremental and idempotent: a session is known by its key; re-ingesting it keeps the messages
  whose digests match the stored ones in order and replaces only what follows the first
  difference (a grown transcript adds its new messages; the same transcript changes nothing).
- Bounded memory: `ingest` takes the rows as any iterable (read once) and stages the new ones,
  tokenized, in a temporary table of this connection (on disk, outside the store's lock), so a
  session of hundreds of megabytes is never held in memory; the write lock is taken only to
  move the staged rows in.
- Bounded by its budget, one session never evicting more than itself: a session larger than
  `max_bytes` on its own is refused before anything is written or evicted (`SessionTooLarge`,
  which says how large it is and which setting to raise). After an ingest, when the store is
  larger than `max_bytes`, the sessions updated longest ago other than the one just written are
  deleted (oldest first) until it holds 80% of it, freeing at most what the ingest added (plus
  what the store was already over its budget, as after the budget was lowered); the search
  index is merged (deleted rows leave it) and the freed pages are given back to the file system.
- Search terms are `memory.tokenize.Tokenizer` terms (English stemmed, compounds split, CJK
  characters and bigrams), each an FTS5 token (`fts_token`), ranked by FTS5's BM25.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from ground.sqlitedb import StoreError, create_schema, immediate, opened
from memory.history.config import HistoryConfig
from memory.history.messages import Row

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (see tests/memory/test_cli.py)
if TYPE_CHECKING:
    from memory.tokenize import Tokenizer

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 10_000
_BATCH = 256
"""Rows staged at a time."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, project TEXT NOT NULL, source TEXT NOT NULL,
    format TEXT NOT NULL, started REAL NOT NULL, updated REAL NOT NULL, count INTEGER NOT NULL,
    stamp TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY, session INTEGER NOT NULL REFERENCES sessions(id), seq INTEGER NOT NULL,
    role TEXT NOT NULL, digest TEXT NOT NULL, text TEXT NOT NULL, steps TEXT NOT NULL, UNIQUE(session, seq));
CREATE VIRTUAL TABLE IF NOT EXISTS terms USING fts5(body, tokenize = 'unicode61 remove_diacritics 0')
"""


class HistoryError(StoreError):
    """The store cannot be used (not a database, a newer schema, no FTS5 in this SQLite); `busy`:
    only because another process held a lock, so trying again may succeed."""


class SessionTooLarge(HistoryError):
    """One session needs more room than the store's whole budget: nothing of it was written and
    nothing was evicted."""


@dataclass(frozen=True)
class Session:
    key: str
    project: str
    source: str
    format: str
    started: float
    updated: float
    count: int


@dataclass(frozen=True)
class _Staged:
    count: int
    """Rows of the session."""
    first: int
    """The first row that differs from the stored session (the rows before it are kept)."""
    chars: int
    """Characters of the staged rows' text and search terms."""
    kept_chars: int
    """Characters of the kept rows' text."""


@dataclass(frozen=True)
class Ingested:
    key: str
    added: int
    """Messages written (0: the store already held the transcript as it is)."""
    kept: int
    evicted: int
    """Sessions deleted to stay within the budget."""


def fts_token(term: str) -> str:
    """One FTS5 token for a memory term: the term when unicode61 keeps it whole (letters and
    digits), else `x` and its UTF-8 bytes in hex (`c++`, `c#`)."""
    return term if term.isalnum() else "x" + term.encode("utf-8").hex()


class HistoryStore:
    """A connection to the store; open one per use (`with HistoryStore.open(cfg) as store`)."""

    def __init__(self, conn: sqlite3.Connection, cfg: HistoryConfig) -> None:
        self.conn, self.cfg = conn, cfg
        self._tokenizer: Tokenizer | None = None

    @classmethod
    @contextlib.contextmanager
    def open(cls, cfg: HistoryConfig) -> Iterator[HistoryStore]:
        with opened(cfg.path, BUSY_TIMEOUT_MS, _prepare, HistoryError) as conn:
            yield cls(conn, cfg)

    def terms(self, text: str) -> list[str]:
        if self._tokenizer is None:
            from memory.tokenize import Tokenizer

            self._tokenizer = Tokenizer(self.cfg.cache_dir, words=False)
        return [fts_token(t) for t in self._tokenizer.tokens(text)]

    def _transaction(self):
        return immediate(self.conn)

    def stamp(self, key: str) -> tuple[str, int] | None:
        """The stamp session `key` was last ingested with (its file's size and time) and its message count."""
        found = self.conn.execute("SELECT stamp, count FROM sessions WHERE key = ?", (key,)).fetchone()
        return (found[0], found[1]) if found else None

    def ingest(self, key: str, rows: Iterable[Row], *, project: str, source: str, fmt: str,
               updated: float | Callable[[], float] | None = None, stamp: str = "") -> Ingested:
        """Store session `key` as `rows` (see the module's rules); then keep the store within budget.
        `updated`: when the session was last active (None: now), or a function that says so once
        `rows` have been read (a session read piece by piece is dated by its last piece).
        `stamp`: what the source looked like (an unchanged file is not read again: `ingest.ingest_file`)."""
        stored = self._digests(key)  # read without the write lock: new rows are staged before it
        staged = self._stage(key, rows, stored)
        when = updated() if callable(updated) else updated
        now = time.time() if when is None else when
        return self._write(key, staged, stored, project=project, source=source, fmt=fmt, now=now,
                           stamp=stamp)

    def _write(self, key: str, staged: _Staged, stored: list[str], *, project: str, source: str,
               fmt: str, now: float, stamp: str) -> Ingested:
        """Move the staged rows of session `key` into the store (one transaction), then evict."""
        with self._transaction() as cur:
            found = cur.execute("SELECT id FROM sessions WHERE key = ?", (key,)).fetchone()
            if self._digests(key) != stored:  # another process changed the session meanwhile
                raise HistoryError(f"session {key} changed while it was ingested", busy=True)
            if found is not None and staged.first == staged.count == len(stored):
                cur.execute("UPDATE sessions SET stamp = ? WHERE id = ?", (stamp, found[0]))
                return Ingested(key, 0, staged.first, 0)
            before = self._used()
            if found is None:
                cur.execute("INSERT INTO sessions (key, project, source, format, started, updated, count)"
                            " VALUES (?,?,?,?,?,?,0)", (key, project, source, fmt, now, now))
                session = cur.lastrowid
            else:
                session = found[0]
                _delete_messages(cur, "session = ? AND seq >= ?", (session, staged.first))
            cur.execute("INSERT INTO messages (session, seq, role, digest, text, steps)"
                        " SELECT ?, seq, role, digest, text, steps FROM temp.staged"
                        " ORDER BY seq", (session,))
            cur.execute("INSERT INTO terms (rowid, body) SELECT m.id, s.body FROM temp.staged s"
                        " JOIN messages m ON m.session = ? AND m.seq = s.seq", (session,))
            cur.execute("UPDATE sessions SET count = ?, updated = ?, project = ?, source = ?, stamp = ?"
                        " WHERE id = ?", (staged.count, now, project, source, stamp, session))
            added = max(0, self._used() - before)
            self._fits(key, staged, added)
        self.conn.execute("DROP TABLE temp.staged")
        over = max(0, before - self.cfg.max_bytes)
        evicted = self.evict(keep=session, at_most=added + over)
        return Ingested(key, staged.count - staged.first, staged.first, evicted)

    def _digests(self, key: str) -> list[str]:
        return [d for (d,) in self.conn.execute(
            "SELECT m.digest FROM messages m JOIN sessions s ON s.id = m.session WHERE s.key = ? ORDER BY m.seq", (key,))]

    def _stage(self, key: str, rows: Iterable[Row], stored: list[str]) -> _Staged:
        """The rows after the first that differs from `stored`, tokenized, in `temp.staged` (a
        table of this connection only: writing it takes no lock of the store). SessionTooLarge
        as soon as their text alone is over the budget (the rest is not read)."""
        self.conn.execute("DROP TABLE IF EXISTS temp.staged")
        self.conn.execute("CREATE TEMP TABLE staged (seq INTEGER PRIMARY KEY, role TEXT,"
                          " digest TEXT, text TEXT, steps TEXT, body TEXT)")
        first = count = chars = kept_chars = 0
        staging, batch = False, []
        self.conn.execute("BEGIN")
        try:
            for seq, row in enumerate(rows):
                count = seq + 1
                if not staging and seq < len(stored) and row.digest == stored[seq]:
                    first, kept_chars = count, kept_chars + len(row.text)
                    continue
                staging = True
                body = " ".join(self.terms(row.text))
                chars += len(row.text) + len(body)
                steps = orjson.dumps(row.steps).decode()
                batch.append((seq, row.role, row.digest, row.text, steps, body))
                if len(batch) >= _BATCH:
                    self.conn.executemany("INSERT INTO temp.staged VALUES (?,?,?,?,?,?)", batch)
                    batch.clear()
                    self._fits(key, _Staged(count, first, chars, kept_chars))
            self.conn.executemany("INSERT INTO temp.staged VALUES (?,?,?,?,?,?)", batch)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        staged = _Staged(count, first, chars, kept_chars)
        self._fits(key, staged)
        return staged

    def _fits(self, key: str, staged: _Staged, added: int | None = None) -> None:
        """SessionTooLarge when session `key` alone needs more than the budget: judged by its text
        before anything is written, then by what its rows took on disk (`added` bytes for the
        staged rows; the kept ones in proportion), before the transaction commits."""
        need = staged.chars + staged.kept_chars
        if added is not None and staged.chars:
            need = int(added * (1 + staged.kept_chars / staged.chars))
        if need > self.cfg.max_bytes:
            raise SessionTooLarge(
                f"session {key} needs at least {need / 2**20:,.0f} MB in the history store, "
                f"more than its whole budget of {self.cfg.max_bytes / 2**20:,.0f} MB: it was not "
                "kept, nothing was evicted (raise [history] max_mb in your own config.toml to "
                "keep it)")

    def _used(self) -> int:
        """Bytes of the file's pages in use (free pages aside), as this connection sees them."""
        page, pages, free = (self.conn.execute(f"PRAGMA {p}").fetchone()[0]
                             for p in ("page_size", "page_count", "freelist_count"))
        return (pages - free) * page

    def size(self) -> int:
        """Bytes the store takes on disk: the database and its WAL."""
        return sum(p.stat().st_size for p in (self.cfg.path, self.cfg.path.with_name(self.cfg.path.name + "-wal"))
                   if p.exists())

    def evict(self, keep: int | None = None, at_most: int | None = None) -> int:
        """Delete the least recently updated sessions (never the session `keep`) while the store is
        over its budget, down to 80% of it (so eviction, which rewrites the search index, is rare)
        and freeing at most `at_most` bytes (None: no limit); the number deleted."""
        if self.size() <= self.cfg.max_bytes:
            return 0
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL's pages into the file, the WAL emptied
        target, evicted = int(self.cfg.max_bytes * 0.8), 0
        start = self._used()
        allowance = float("inf") if at_most is None else at_most
        for _ in range(8):  # each round deletes what its estimate says, then measures again
            used = self._used()
            if used <= target:
                break
            sizes = self.conn.execute("SELECT s.id, coalesce(sum(length(m.text)), 0) FROM sessions s LEFT JOIN messages m"
                                      " ON m.session = s.id GROUP BY s.id ORDER BY s.updated, s.id").fetchall()
            per_char = used / max(1, sum(n for _, n in sizes))  # bytes on disk per character of text
            doomed, freed = [], 0.0
            for session, chars in sizes:
                if used - freed <= target:
                    break
                if session == keep:
                    continue
                beyond = start - used + freed + chars * per_char > allowance
                if beyond and used - freed <= self.cfg.max_bytes:
                    break  # it would free more than the ingest may, and the store is within budget
                doomed.append(session)
                freed += chars * per_char
            if not doomed:
                break
            with self._transaction() as cur:
                for session in doomed:
                    _delete_messages(cur, "session = ?", (session,))
                    cur.execute("DELETE FROM sessions WHERE id = ?", (session,))
                cur.execute("INSERT INTO terms (terms) VALUES ('optimize')")  # deleted rows leave the index
            evicted += len(doomed)
            self.conn.executescript("PRAGMA incremental_vacuum;")  # executescript steps it to the end
        self.conn.executescript("PRAGMA incremental_vacuum;")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return evicted

    def sessions(self, project: str | None = None, limit: int = 50) -> list[Session]:
        """Sessions, most recently updated first (`project`: its path or folder name)."""
        where, params = project_filter(project)
        rows = self.conn.execute(f"SELECT key, project, source, format, started, updated, count FROM sessions s"
                                 f" WHERE {where} ORDER BY updated DESC, id DESC LIMIT ?", (*params, limit))
        return [Session(*r) for r in rows]

    def steps(self, project: str | None = None) -> dict[str, list[tuple[str, str]]]:
        """Session key -> its tool steps in order (`memory.history.steps`), for `memory.distill`."""
        where, params = project_filter(project)
        out: dict[str, list[tuple[str, str]]] = {}
        for key, steps in self.conn.execute(
                "SELECT s.key, m.steps FROM messages m JOIN sessions s ON s.id = m.session"
                f" WHERE {where} AND m.steps != '[]' ORDER BY s.id, m.seq", params):
            out.setdefault(key, []).extend(tuple(step) for step in orjson.loads(steps))
        return out

    def first_prompts(self, project: str | None = None) -> dict[str, str]:
        """Session key -> the text of its first user message: its task, for `memory.distill`."""
        where, params = project_filter(project)
        return {key: " ".join(text.split())[:500] for key, text in self.conn.execute(
            "SELECT s.key, m.text FROM messages m JOIN sessions s ON s.id = m.session"
            f" WHERE {where} AND m.role = 'user' AND m.seq = (SELECT min(seq) FROM messages"
            " WHERE session = s.id AND role = 'user') ORDER BY s.id", params)}

    def stats(self) -> dict:
        sessions, messages = self.conn.execute(
            "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM messages)").fetchone()
        return {"sessions": sessions, "messages": messages, "bytes": self.size(), "max_bytes": self.cfg.max_bytes,
                "path": str(self.cfg.path)}


def project_filter(project: str | None, alias: str = "s") -> tuple[str, tuple]:
    """An SQL condition on sessions (`alias`) for a project given by its path (a worktree's: its
    repository's, `memory.history.projects`) or its folder's name."""
    from memory.history.projects import repository_of

    if not project:
        return "1", ()
    project = repository_of(project)
    return (f"({alias}.project = ? OR {alias}.project LIKE ? ESCAPE '\\')",
            (project, "%/" + project.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")))


def _delete_messages(cur: sqlite3.Cursor, where: str, params: tuple) -> None:
    cur.execute(f"DELETE FROM terms WHERE rowid IN (SELECT id FROM messages WHERE {where})", params)
    cur.execute(f"DELETE FROM messages WHERE {where}", params)


def _prepare(conn: sqlite3.Connection, path: Path) -> None:
    """WAL, incremental auto-vacuum and the schema (created once, under a write lock)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise HistoryError(f"{path}: written by a newer ctxmill (schema {version}; this one reads {SCHEMA_VERSION})")
    if version == SCHEMA_VERSION:
        return
    if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # only before the first table
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    create_schema(conn, _SCHEMA, SCHEMA_VERSION)  # no FTS5 in this SQLite: an OperationalError, a HistoryError
