"""The team's ledger, in the shared store: every replica adds its requests, anyone reads them all.

With a shared store the proxy and the LiteLLM guardrail write their rows to one Redis stream,
`<prefix>ledger` (`TeamSink`, in the batches of `ctxmill.ledger.batch`), each row a signed line
(`ground.signing`, the team's store key, over the stream's name): a row that fails its check is
never counted (a co-tenant cannot inflate or erase the team's figures by writing rows; it can
only delete the stream). `synced(address, cache)` brings a local SQLite copy (the ledger's own
schema, `ctxmill.ledger.store`) up to date with the stream, reading only the rows added since
its last call, and returns its path: `ctxmill stats --store` and every replica's dashboard read
that file with the same roll-ups as a user's ledger (`ctxmill.ledger.report`). The stream keeps
the latest `MAX_ROWS` rows (older ones leave Redis; a copy that already holds them keeps them).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, fields
from pathlib import Path

import orjson

from ctxmill.ledger.store import Ledger, Project, RequestRow
from ground.redis_client import StoreAddress
from ground.signing import open_line, sign_line

log = logging.getLogger("ctxmill.ledger")

MAX_ROWS = 1_000_000
READ_CHUNK = 5_000
_SYNC_TABLE = "CREATE TABLE IF NOT EXISTS team_sync (id INTEGER PRIMARY KEY CHECK (id = 1), last TEXT NOT NULL)"


def stream_name(address: StoreAddress) -> str:
    return f"{address.prefix}ledger"


def _encoded(row: RequestRow) -> bytes:
    values = asdict(row)
    values["project"] = [row.project.id, row.project.name]
    return orjson.dumps(values)


_ROW_FIELDS = frozenset(field.name for field in fields(RequestRow))


def _decoded(data: bytes) -> RequestRow:
    """The row a signed line holds; fields this version does not know (a newer replica's) are
    left out, so replicas of two versions count each other's rows during an upgrade."""
    values = orjson.loads(data)
    project_id, name = values.pop("project")
    known = {key: value for key, value in values.items() if key in _ROW_FIELDS}
    return RequestRow(project=Project(str(project_id), str(name)), **known)


class TeamSink:
    """Rows into the team's stream (one pipeline per batch)."""

    def __init__(self, address: StoreAddress) -> None:
        from ctxmill.shared_store import client

        self._redis, self._name, self._key = client(address), stream_name(address), address.key

    def write(self, rows: list[RequestRow]) -> None:
        context = self._name.encode()
        pipe = self._redis.pipeline(transaction=False)
        for row in rows:
            pipe.xadd(self._name, {"r": sign_line(self._key, context, _encoded(row))}, maxlen=MAX_ROWS,
                      approximate=True)
        pipe.execute()

    def close(self) -> None:
        pass


def synced(address: StoreAddress, cache: Path) -> Path:
    """`cache` (a ledger file of the team's rows) with every row the stream added since the last
    call; rows that fail their check are skipped and counted in the log. Redis errors propagate."""
    from ctxmill.shared_store import client

    redis, name = client(address), stream_name(address)
    context = name.encode()
    with Ledger.open(cache) as ledger:
        conn = ledger.conn
        conn.execute(_SYNC_TABLE)
        found = conn.execute("SELECT last FROM team_sync WHERE id = 1").fetchone()
        last = found[0] if found else "0-0"
        rejected = 0
        while True:
            entries = redis.xrange(name, min=f"({last}", count=READ_CHUNK)
            if not entries:
                break
            rows = []
            for _, values in entries:
                row = _verified(address.key, context, values.get(b"r", b""))
                if row is None:
                    rejected += 1
                else:
                    rows.append(row)
            last = entries[-1][0].decode()
            _commit(ledger, rows, last)
        if rejected:
            log.warning("team ledger %s: %d rows fail their integrity check and are not counted", name, rejected)
    return cache


def _verified(key: bytes, context: bytes, signed: bytes) -> RequestRow | None:
    line = open_line(key, context, signed)
    if line is None:
        return None
    try:
        return _decoded(line)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None


def _commit(ledger: Ledger, rows: list[RequestRow], last: str) -> None:
    """The rows and how far the copy has read, in one transaction."""
    from ground.sqlitedb import immediate

    with immediate(ledger.conn) as cur:
        for row in rows:
            Ledger._insert(cur, row)
        cur.execute("INSERT INTO team_sync (id, last) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET last = ?",
                    (last, last))


def cache_file(home: Path, address: StoreAddress) -> Path:
    """Where this machine keeps its copy of the team's ledger (one per store and prefix)."""
    import hashlib

    digest = hashlib.sha256(f"{address.url}\n{address.prefix}".encode()).hexdigest()[:16]
    return home / f"team-ledger-{digest}.sqlite"

