"""Putting sessions into the history store: a live transcript (hooks, the OpenCode engine) or
session files of any format `compress.formats.sessions` reads (`ctxmill import`).

Must hold: a session's key is the host's session id when known, else the file's stem (so a
Claude Code session ingested by its hooks and imported later from its file is one session); its
project is the folder the recording names (`cwd` in its first lines) when it names one, else
the one given, a git worktree counted as its main repository (`memory.history.projects`); a
session is dated by its own last recorded message (its last model call or the last timestamp of
the file), the file's modification time only when the recording has none; nothing is ingested
when `HistoryConfig.enabled` is false; a file whose path, size and modification time are those
it was last ingested with is not read again; a file is read piece by piece
(`read_session_pieces`) and its rows reach the store as they are made, so memory holds one piece
of a session however long it is; a session larger than the store's budget is refused
(`store.SessionTooLarge`) with nothing written or evicted; a store another process keeps locked
is tried again (`ground.sqlitedb.retrying`, the file read again) before the error is raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import chain
from pathlib import Path
from typing import TypeVar

import orjson

from memory.history.config import HistoryConfig
from memory.history.messages import Row, rows_of
from memory.history.store import HistoryStore, Ingested

_CWD_LINES = 50
T = TypeVar("T")


def recorded_cwd(data: bytes) -> str | None:
    """The working folder a recording names in its first lines (Claude Code `cwd`, Codex
    `session_meta.payload.cwd`, OpenCode `directory`), else None."""
    for line in data[: 1 << 20].splitlines()[:_CWD_LINES]:
        if b'"cwd"' not in line and b'"directory"' not in line:
            continue
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        for holder in (item, item.get("payload") if isinstance(item, dict) else None):
            if isinstance(holder, dict):
                for name in ("cwd", "directory"):
                    if isinstance(holder.get(name), str) and holder[name].startswith("/"):
                        return holder[name]
    return None


def ingest_transcript(cfg: HistoryConfig, transcript, key: str, project: str, source: str = "",
                      updated: float | None = None) -> Ingested | None:
    """Store one `Transcript` under `key` (None when history is turned off)."""
    if not cfg.enabled:
        return None
    from memory.history.projects import last_recorded, repository_of

    rows = rows_of(transcript, cfg.redact_extra, cfg.redact_allow, cfg.max_message_chars)
    when = updated if updated is not None else last_recorded([transcript], b"")
    return _store(cfg, lambda store: store.ingest(key, rows, project=repository_of(project), source=source,
                                                  fmt=transcript.format, updated=when))


def ingest_file(cfg: HistoryConfig, path: str | Path, project: str, key: str | None = None, fmt: str | None = None,
                updated: float | None = None) -> Ingested | None:
    """Store the session recorded in `path` (OSError / `compress.formats.sessions.UnknownFormat`
    on bad input). `updated` defaults to the time of the session's last recorded message."""
    from compress.formats.sessions import read_session_pieces
    from ground.files import open_regular
    from memory.checkpoint import session_id_for
    from memory.history.projects import last_recorded, repository_of

    if not cfg.enabled:
        return None
    path = Path(path)
    key = session_id_for(path, key)
    info = path.stat()
    stamp = f"{path.resolve()}:{info.st_size}:{info.st_mtime_ns}"
    known = _store(cfg, lambda store: store.stamp(key))
    if known and known[0] == stamp:  # the file has not changed since it was ingested
        return Ingested(key, 0, known[1], 0)
    pieces = read_session_pieces(path, fmt)
    first = next(pieces)  # bad input is said before the store is touched
    with open_regular(path) as source:
        cwd = recorded_cwd(source.read(1 << 20))
        source.seek(max(0, info.st_size - (1 << 16)))
        tail = source.read(1 << 16)
    unread = [chain([first], pieces)]  # for this attempt; one tried again reads the file again
    latest: list[float] = []  # the last model call of the pieces read so far, once there is one

    def rows() -> Iterator[Row]:
        latest.clear()
        for piece in unread.pop() if unread else read_session_pieces(path, first.format):
            if (at := last_recorded([piece], b"")) is not None:
                latest[:] = [max([at, *latest])]
            yield from rows_of(piece, cfg.redact_extra, cfg.redact_allow, cfg.max_message_chars)

    def when() -> float:
        """Asked once the rows are read: the session's last call, else its file's last stamp."""
        if updated is not None:
            return updated
        recorded = latest[0] if latest else last_recorded([], tail)
        return info.st_mtime if recorded is None else recorded

    return _store(cfg, lambda store: store.ingest(
        key, rows(), project=repository_of(cwd or project), source=str(path.resolve()), fmt=first.format,
        updated=when, stamp=stamp))


def _store(cfg: HistoryConfig, use: Callable[[HistoryStore], T]) -> T:
    """`use(store)` on a store opened for it, run again while another process holds the lock
    (`ground.sqlitedb.retrying`; an ingest is idempotent, so a second run changes nothing the first
    committed)."""
    from ground.sqlitedb import retrying

    def run() -> T:
        with HistoryStore.open(cfg) as store:
            return use(store)

    return retrying(run)
