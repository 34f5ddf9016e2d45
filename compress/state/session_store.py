"""Where a session's state is kept: a directory (the embedded default) or a Redis server.

Both places hold the same lines, those `compress.state.session` writes (an epoch header, then
message records sealed against the raw messages, so no secret the client sent is at rest in
either; in Redis, which others may write, each line is signed: `RedisState`), and offer the same
five operations:
- `lock()`: a context manager held around every load, run and save of the session (a file lock;
  in Redis a lock with a lease, so the lock of a process killed while holding it expires);
  raises `StateBusy` when it cannot be had within its wait;
- `read()`: the state's bytes (None: no state yet) and their signature;
- `signature()`: changes whenever anyone writes the state (a process that keeps the session in
  memory reloads when it differs from what it last read or wrote);
- `rewrite(data)`: replace the state atomically (an epoch); `append(data)`: add lines (between
  epochs, not fsync-ed: a machine crash may lose the last ones, never tear the lines before).
  Both return the new signature. In Redis, a place holding its lock knows the signature and
  whether the state exists from the lock's take and its own writes (no round trip), and a write
  is made only if nobody wrote since (`StateChanged`). A Redis place also offers
  `read_since(signature)`: only the lines appended since it last read or wrote the state.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ground.files import atomic_write, open_private, private_lock
from ground.signing import open_line, sign_line

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


class StateChanged(Exception):
    """Another process wrote the state while this one held its lock (the lease ran out): this
    one's write was not made."""


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
        # No fsync: a process crash loses nothing (the bytes are in the page cache), and a machine
        # crash at most the last appends, as the CCR store's WAL with synchronous=NORMAL; the
        # session then re-renders those messages. An fsync here cost 5-20 ms after every answer,
        # in the worker the next request waits for.
        return self.signature()


_TAKE = """
local held = redis.call('GET', KEYS[1])
if not held or held == ARGV[1] or redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1, redis.call('GET', KEYS[2]) or '', redis.call('EXISTS', KEYS[3])}
end
return 0
"""
"""Take the lock when it is free, already ours, or has no lease (no ctxmill process sets one
without: it is garbage or another program's, and would block the session for ever); once taken,
also the state's write counter ('' when none) and whether the state exists, so a run under the
lock needs no further round trip to learn them."""
_WRITE = """
if ARGV[4] ~= '*' and (redis.call('GET', KEYS[2]) or '') ~= ARGV[4] then return false end
if ARGV[1] == 'set' then redis.call('SET', KEYS[1], ARGV[2]) else redis.call('APPEND', KEYS[1], ARGV[2]) end
local version = redis.call('INCR', KEYS[2])
if ARGV[1] == 'set' then redis.call('SET', KEYS[3], version) end
for _, key in ipairs(KEYS) do redis.call('EXPIRE', key, ARGV[3]) end
return version
"""
"""Replace (`set`) or extend (`append`) the state, count the write, note the count of a rewrite
(KEYS[3]: the state's bytes since then were only appended) and renew the keys' expiry, in one
step; only when the write counter is still ARGV[4] (what the lock's holder last saw; '*': any),
else nothing is written (false)."""
_TAIL = """
return {redis.call('GET', KEYS[2]) or '', redis.call('GET', KEYS[3]) or '', redis.call('GETRANGE', KEYS[1], ARGV[1], -1)}
"""
"""The write counter, the count of the last rewrite and the state's bytes from offset ARGV[1],
as of one moment (`RedisState.read_since`)."""
_GIVE_BACK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
POLL_SECONDS = 0.05
"""How often a process waiting for a session's lock tries again."""


class RedisState:
    """A session's state in Redis: `<prefix>session:<name>` (the lines, each signed:
    `ground.signing`), `…:v` (a write counter, the signature) and `…:lock` (the lock: a token
    with a lease). `client` is a `redis.Redis` (see `ground.redis_client`); its errors propagate
    (the caller fails open). `key`: the MAC key of the team's records (never read from Redis).

    Must hold:
    - A line whose MAC fails (written by anyone without the key, moved from another session or
      prefix, changed) is never used: dropped on `read`, counted in `take_rejected()`; when the
      header line fails, the whole state is ignored (the session starts a new epoch). So who can
      write the Redis can make ctxmill forget (an epoch, a cache write) but never put text of
      their choosing into a request.
    - The lock is taken atomically (a Lua script) when free, already held with this place's
      token, or held without a lease (`_TAKE`); it is given back only by its holder. A lock this
      place may have left behind because Redis failed mid-call (a hang, a restart) is given back
      as soon as Redis answers again (`_Janitor`, trying for at most one lease), so
      the session's next request, on any replica, is not held up by it."""

    def __init__(self, client, prefix: str, name: str, key: bytes = b"", lease: float = LEASE_SECONDS,
                 wait: float = WAIT_SECONDS, keep: int = KEEP_SECONDS) -> None:
        if not key:
            raise ValueError("a shared store's session records need a MAC key (the team's store key)")
        self._redis = client
        base = f"{prefix}session:{name}"
        self._data, self._version, self._lock, self._rewritten = base, base + ":v", base + ":lock", base + ":e"
        self._context = self._data.encode()
        self._key = key
        self._token = os.urandom(16).hex()
        self._rejected = 0
        self._seen: tuple[bytes | None, bool] | None = None
        """While this place holds the lock: the write counter and whether the state exists, as
        of the lock's take or this place's last write (no other ctxmill process writes meanwhile);
        None otherwise (`signature` and `exists` then ask Redis)."""
        self._opened: dict[bytes, bytes] = {}
        """The signed lines of the last `read` whose MAC held, and what they carry: the same bytes
        read again (a reload after another replica appended) are not checked again; any other
        line is (a changed byte makes another line)."""
        self._mark: _Mark | None = None
        """Where the state stood when this place last read or wrote all of it (None: unknown)."""
        self._take, self._tail = client.register_script(_TAKE), client.register_script(_TAIL)
        self._commit, self._give_back = client.register_script(_WRITE), client.register_script(_GIVE_BACK)
        self.lease, self.wait, self.keep = lease, wait, keep

    def __repr__(self) -> str:
        return f"RedisState({self._data!r})"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        lease_ms = str(int(self.lease * 1000))
        give_up = time.monotonic() + self.wait
        try:
            while not (taken := self._take(keys=[self._lock, self._version, self._data], args=[self._token, lease_ms])):
                if time.monotonic() >= give_up:
                    raise StateBusy(f"session lock {self._lock} still held after {self.wait:g} s")
                time.sleep(POLL_SECONDS)
        except StateBusy:
            raise
        except Exception:
            _janitor.give_back(self._redis, self._lock, self._token, self.lease)  # it may have landed
            raise
        self._seen = (taken[1] or None, bool(taken[2]))
        try:
            yield
        finally:
            self._seen = None
            try:
                if not self._give_back(keys=[self._lock], args=[self._token]):
                    log.warning("session lock %s lost before release: its lease ran out", self._lock)
            except Exception as exc:  # noqa: BLE001 - Redis failed: given back once it answers
                log.warning("session lock %s not released now: %s", self._lock, type(exc).__name__)
                _janitor.give_back(self._redis, self._lock, self._token, self.lease)

    def read(self) -> tuple[bytes | None, object]:
        data, version, rewritten = self._redis.mget(self._data, self._version, self._rewritten)  # as of one moment
        self._mark = _Mark.of(version, rewritten, data, len(data or b""))
        return self._verified(data), version

    def read_since(self, signature: object) -> tuple[bytes, object] | None:
        """The verified lines appended to the state since it stood at `signature` (this place's
        last `read` or write), and the signature now; None when that cannot be known (this place
        did not last see the state at `signature`, the state was rewritten since, the bytes where
        it ended are not the line it ended with): then `read` the whole. One round trip, which
        reads the last line already known again and what follows it. Lines past it are checked
        as `read` checks them; those before it are not read again (a co-tenant's change to them
        is seen at the next whole read, as any change it makes: lines dropped, never used)."""
        mark = self._mark
        if mark is None or signature != mark.version:
            return None
        start = mark.length - len(mark.last)
        version, rewritten, data = self._tail(keys=[self._data, self._version, self._rewritten], args=[start])
        version = version or None
        if rewritten != mark.rewritten or not data.startswith(mark.last) or not data.endswith(b"\n"):
            self._mark = None
            return None
        appended = data[len(mark.last):]
        self._mark = _Mark.of(version, rewritten, data, start + len(data))
        lines = [line for line in appended.split(b"\n") if line]
        opened = self._open(lines, dict(self._opened))
        return b"".join(line + b"\n" for line in opened if line is not None), version

    def take_rejected(self) -> int:
        """Lines dropped by `read` and `read_since` since the last call, for the caller's stats."""
        n, self._rejected = self._rejected, 0
        return n

    def signature(self) -> object:
        return self._seen[0] if self._seen is not None else self._redis.get(self._version)

    def exists(self) -> bool:
        return self._seen[1] if self._seen is not None else bool(self._redis.exists(self._data))

    def rewrite(self, data: bytes) -> object:
        """Both writes raise `StateChanged` (nothing written) when another process wrote the
        state since this place took its lock (its lease ran out): theirs wins."""
        return self._write("set", self._signed(data))

    def append(self, data: bytes) -> object:
        return self._write("append", self._signed(data))

    def _signed(self, data: bytes) -> bytes:
        return b"".join(sign_line(self._key, self._context, line) + b"\n" for line in data.split(b"\n") if line)

    def _verified(self, data: bytes | None) -> bytes | None:
        if data is None:
            return None
        lines = [line for line in data.split(b"\n") if line]
        opened = self._open(lines, {})
        if opened and opened[0] is None:
            self._rejected += len(lines) - sum(line is None for line in opened)  # _open counted the rest
            log.warning("%s: its header fails the integrity check: the state is ignored", self._data)
            return None
        return b"".join(line + b"\n" for line in opened if line is not None)

    def _open(self, lines: list[bytes], kept: dict[bytes, bytes]) -> list[bytes | None]:
        """What each signed line carries (None: its MAC fails, counted as rejected); `_opened`
        becomes `kept` and the lines whose MAC held."""
        known = self._opened
        opened = [known[line] if line in known else open_line(self._key, self._context, line) for line in lines]
        kept.update((line, text) for line, text in zip(lines, opened) if text is not None)
        self._opened = kept
        if bad := sum(line is None for line in opened):
            self._rejected += bad
            log.warning("%s: %d records fail the integrity check and are ignored", self._data, bad)
        return opened

    def _write(self, how: str, data: bytes) -> object:
        expected = b"*" if self._seen is None else self._seen[0] or b""
        mark, self._mark = self._mark, None
        extends = mark if mark is not None and self._seen is not None and mark.version == self._seen[0] else None
        version = self._commit(keys=[self._data, self._version, self._rewritten],
                               args=[how, data, self.keep, expected])
        if version is None:
            self._seen = None  # ask Redis again from now on
            raise StateChanged(f"{self._data} was written by another process since its lock was taken")
        signature = str(version).encode()
        if self._seen is not None:
            self._seen = (signature, True)
            if how == "set":
                self._mark = _Mark.of(signature, signature, data, len(data))
            elif extends is not None:
                self._mark = _Mark.of(signature, extends.rewritten, data, extends.length + len(data))
        return signature


@dataclass(frozen=True, slots=True)
class _Mark:
    """Where a session's state in Redis stood: its write counter, the count at its last rewrite,
    its length and its last line (signed, with its newline)."""

    version: bytes | None
    rewritten: bytes
    length: int
    last: bytes

    @classmethod
    def of(cls, version: bytes | None, rewritten: bytes | None, end: bytes | None, length: int) -> _Mark | None:
        """The mark of a state `length` bytes long that ends with `end` (None when there is none to
        extend: no state, no rewrite count, or not ending with a whole line)."""
        if not end or not rewritten or not end.endswith(b"\n"):
            return None
        return cls(version, rewritten, length, end.rsplit(b"\n", 2)[-2] + b"\n")


class _Janitor:
    """Gives back locks a place may have left in Redis when a call failed (the command may have
    reached Redis, its answer not us): one daemon thread tries each every `POLL_SECONDS` × 4 until
    Redis answers or the lock's lease would have ended it anyway."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._todo: dict[tuple[int, str, str], tuple[object, float]] = {}
        self._thread: threading.Thread | None = None

    def give_back(self, client, lock: str, token: str, lease: float) -> None:
        with self._lock:
            self._todo[(id(client), lock, token)] = (client, time.monotonic() + lease)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ctxmill-lock-janitor", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                todo = dict(self._todo)
            if not todo:
                with self._lock:
                    if not self._todo:
                        self._thread = None
                        return
                continue
            for item, (client, until) in todo.items():
                try:
                    client.eval(_GIVE_BACK, 1, item[1], item[2])  # type: ignore[attr-defined]
                except Exception:  # noqa: BLE001 - still unreachable: try again
                    if time.monotonic() < until:
                        continue
                with self._lock:
                    self._todo.pop(item, None)
            time.sleep(POLL_SECONDS * 4)


_janitor = _Janitor()
