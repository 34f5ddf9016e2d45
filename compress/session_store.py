"""Where a session's state is kept: a directory (the embedded default) or a Redis server.

Both places hold the same bytes, the lines `compress.session` writes (an epoch header, then
message records sealed against the raw messages, so no secret the client sent is at rest in
either), and offer the same five operations:
- `lock()`: a context manager held around every load, run and save of the session (a file lock;
  in Redis a lock with a lease, so the lock of a process killed while holding it expires);
  raises `StateBusy` when it cannot be had within its wait;
- `read()`: the state's bytes (None: no state yet) and their signature;
- `signature()`: changes whenever anyone writes the state (a process that keeps the session in
  memory reloads when it differs from what it last read or wrote);
- `rewrite(data)`: replace the state atomically (an epoch); `append(data)`: add lines (between
  epochs). Both return the new signature.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Iterator

from ground.files import atomic_write, open_private, private_lock

log = logging.getLogger("ctxmill.compress")

STATE_FILE = "state.jsonl"
LOCK_FILE = "state.lock"
LEASE_SECONDS = 10.0
"""A Redis session lock expires this long after it was taken (a run takes well under a second)."""
WAIT_SECONDS = 12.0
"""How long a process waits for another's lock: past one lease, so a dead holder's lock is had."""
KEEP_SECONDS = 30 * 86400
"""A session's state in Redis expires this long after its last write (as old session folders are pruned)."""


class StateBusy(Exception):
    """The session's lock could not be taken in time."""


class StateFiles:
    """`<directory>/state.jsonl` under `<directory>/state.lock` (the embedded default)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"StateFiles({str(self.directory)!r})"

    def lock(self):
        return private_lock(self.directory / LOCK_FILE)

    def read(self) -> tuple[bytes | None, object]:
        signature = self.signature()
        try:
            return (self.directory / STATE_FILE).read_bytes(), signature
        except FileNotFoundError:
            return None, signature

    def signature(self) -> object:
        try:
            st = (self.directory / STATE_FILE).stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def exists(self) -> bool:
        return (self.directory / STATE_FILE).exists()

    def rewrite(self, data: bytes) -> object:
        atomic_write(self.directory / STATE_FILE, data)
        return self.signature()

    def append(self, data: bytes) -> object:
        with open(open_private(self.directory / STATE_FILE, os.O_RDWR | os.O_APPEND), "ab+") as fh:  # never through a link
            torn = fh.tell() > 0 and fh.seek(-1, os.SEEK_END) >= 0 and fh.read(1) != b"\n"
            # After a crash mid-append, end the torn line first so the new records stay whole.
            fh.write((b"\n" if torn else b"") + data)
            fh.flush()
            os.fsync(fh.fileno())
        return self.signature()


class RedisState:
    """A session's state in Redis: `<prefix>session:<name>` (the lines), `…:v` (a write counter,
    the signature) and `…:lock` (the lock, `redis-py`'s token lock with a lease). `client` is a
    `redis.Redis` (see `ground.redis_client`); its errors propagate (the caller fails open)."""

    def __init__(self, client, prefix: str, name: str, lease: float = LEASE_SECONDS,
                 wait: float = WAIT_SECONDS, keep: int = KEEP_SECONDS) -> None:
        self._redis = client
        base = f"{prefix}session:{name}"
        self._data, self._version, self._lock = base, base + ":v", base + ":lock"
        self.lease, self.wait, self.keep = lease, wait, keep

    def __repr__(self) -> str:
        return f"RedisState({self._data!r})"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        held = self._redis.lock(self._lock, timeout=self.lease, blocking_timeout=self.wait, thread_local=False)
        if not held.acquire():
            raise StateBusy(f"session lock {self._lock} still held after {self.wait:g} s")
        try:
            yield
        finally:
            try:
                held.release()
            except Exception as exc:  # noqa: BLE001 - the lease ran out (a very slow run): say so
                log.warning("session lock %s lost before release: %s", self._lock, type(exc).__name__)

    def read(self) -> tuple[bytes | None, object]:
        data, version = self._redis.pipeline(transaction=True).get(self._data).get(self._version).execute()
        return data, version

    def signature(self) -> object:
        return self._redis.get(self._version)

    def exists(self) -> bool:
        return bool(self._redis.exists(self._data))

    def rewrite(self, data: bytes) -> object:
        return self._write("set", data)

    def append(self, data: bytes) -> object:
        return self._write("append", data)

    def _write(self, how: str, data: bytes) -> object:
        pipe = self._redis.pipeline(transaction=True)
        getattr(pipe, how)(self._data, data)
        pipe.incr(self._version).expire(self._data, self.keep).expire(self._version, self.keep)
        version = pipe.execute()[1]
        return str(version).encode()
