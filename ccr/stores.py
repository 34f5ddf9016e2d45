"""Which CCR backend a face opens: the embedded SQLite store in a directory, or Redis when a
store address is configured (`ground.redis_client.StoreAddress`; the faces read it once, in
`ctxmill.settings`). One place decides, so every face reads and writes the same originals."""

from __future__ import annotations

from pathlib import Path

from ccr.base import CCRError, OriginalsStore, Retention
from ground.redis_client import StoreAddress


def open_store(directory: Path | None, retention: Retention = Retention(),
               address: StoreAddress | None = None, client=None) -> OriginalsStore:
    """The store originals go to: Redis at `address` (through `client` when given, else a new
    one; the connection opens on first use), else the SQLite store in `directory` (None:
    in memory). CCRError when it cannot be opened (the `redis` package missing included)."""
    if address is None:
        from ccr.store import CCRStore

        return CCRStore(directory, retention=retention)
    from ccr.redis_store import RedisCCRStore
    from ground.redis_client import connect

    try:
        client = client if client is not None else connect(address)
    except ImportError as exc:
        raise CCRError(str(exc)) from None
    return RedisCCRStore(client, address.prefix, key=address.key, retention=retention, shown=address.shown)
