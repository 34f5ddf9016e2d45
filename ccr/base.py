"""What every CCR backend shares: the interface, its results and its one-line messages.

A backend (`ccr.store.CCRStore`, SQLite, the default; `ccr.redis_store.RedisCCRStore`, for
several machines) subclasses `OriginalsStore` and implements `_write`, `_lookup`, `refresh`,
`stats` and `close`. Must hold for every backend (tests/test_ccr_backends.py runs the same
checks on both):
- `put` is idempotent: identical text gives the identical key and one entry.
- Inside `batch()` puts are buffered and written in ONE atomic commit on exit; if that commit
  fails, `batch()` raises CCRError and nothing is stored (the caller fails open).
- `get` never raises for a bad, unknown or expired key: it returns a Lookup whose `message`
  says in one line what happened and, when known, what to re-run. It raises CCRError only when
  the store itself cannot be read.
- An entry lives `ttl_seconds` after its last put, get or `refresh`; the live payload stays under
  `max_bytes` by evicting the least recently used entries first, never those the same commit
  wrote. Expired and evicted entries leave a tombstone (key, hint, times, reason) for
  `tombstone_seconds`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ccr.keys import is_valid_key, make_key

DAY = 86400.0
HINT_MAX = 300
REFRESH_EVERY = 0.25
"""A caller's refresh writes at most once per this fraction of the TTL."""


@dataclass(frozen=True)
class Retention:
    """How long and how much the store keeps (config.toml `[ccr]`: `ttl_hours`, `max_mb`)."""

    ttl_seconds: float = DAY
    """An entry lives this long after its last put, get or refresh."""
    max_bytes: int = 512 * 2**20
    """Live payload cap; the least recently used entries are evicted beyond it."""


class CCRError(Exception):
    """The store could not be opened or a write could not be committed."""


@dataclass(frozen=True)
class Lookup:
    """Result of a store's `get`. `text` is set only when status == "ok"; `message` otherwise."""

    key: str
    status: str  # "ok" | "expired" | "missing" | "invalid"
    text: str | None
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Stats:
    path: str
    entries: int
    tombstones: int
    live_bytes: int
    max_bytes: int
    ttl_seconds: float


@dataclass(frozen=True)
class Found:
    """What a backend's `_lookup` read: the body (None when gone) and the tombstone's facts."""

    body: bytes | None
    hint: str | None
    created: float
    accessed: float
    reason: str | None
    gone: float | None = None
    """When the body was dropped, where the backend records it with the last access."""


class OriginalsStore:
    """The CCR interface. Share a store across processes freely; within a process one
    instance may be used from several threads (calls are serialized by the backend)."""

    path: str

    def __init__(self, retention: Retention, tombstone_seconds: float, clock: Callable[[], float]) -> None:
        self.ttl_seconds = retention.ttl_seconds
        self.max_bytes = retention.max_bytes
        self.tombstone_seconds = tombstone_seconds
        self._clock = clock
        self._local = threading.local()

    # ---------------------------------------------------------------- the backend's part

    def _write(self, items: dict[str, tuple[str, str | None]]) -> None:
        """Commit `items` (key -> (text, hint)) atomically, then expire and evict. CCRError."""
        raise NotImplementedError

    def _lookup(self, key: str, now: float) -> Found | None:
        """The entry or its tombstone (None: never stored, or long gone), refreshing a live
        entry read within its TTL. CCRError when the store cannot be read."""
        raise NotImplementedError

    def refresh(self, keys) -> float:
        """A full TTL from now for the live entries among `keys` (the markers a session still
        sends), in one commit; returns the time of the refresh. Raises CCRError."""
        raise NotImplementedError

    def stats(self) -> Stats:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # ---------------------------------------------------------------- shared

    def put(self, text: str, hint: str | None = None) -> str:
        """Store `text` (idempotent) and return its key. `hint` says what to re-run to get
        the text again once it is gone, e.g. "re-run the tool call `cat src/x.py`".
        Outside batch() the write is committed before returning; raises CCRError if not."""
        key = make_key(text)
        pending = getattr(self._local, "pending", None)
        if pending is not None:
            earlier = pending.get(key)
            pending[key] = (text, clean_hint(hint) or (earlier[1] if earlier else None))
        else:
            self._write({key: (text, clean_hint(hint))})
        return key

    @contextmanager
    def batch(self) -> Iterator[OriginalsStore]:
        """Buffer puts and commit them in one transaction on exit. Raises CCRError when the
        commit fails; an exception inside the block discards the buffered puts. Nested
        batches join the outermost one."""
        if getattr(self._local, "pending", None) is not None:
            yield self
            return
        self._local.pending = {}
        try:
            yield self
            pending = self._local.pending
        finally:
            self._local.pending = None
        if pending:
            self._write(pending)

    def refresh_due(self, since: float) -> bool:
        """Whether a caller that last refreshed at `since` should refresh again now."""
        return self._clock() - since >= self.ttl_seconds * REFRESH_EVERY

    def get(self, key: str) -> Lookup:
        """The original text for `key`, refreshing its TTL; or a one-line reason why not."""
        if not is_valid_key(key):
            return Lookup(str(key), "invalid", None, invalid_key_message(key))
        pending = getattr(self._local, "pending", None)
        if pending is not None and key in pending:
            return Lookup(key, "ok", pending[key][0], "")
        now = self._clock()
        found = self._lookup(key, now)
        if found is not None and found.body is not None and now - found.accessed <= self.ttl_seconds:
            return Lookup(key, "ok", decode(found.body), "")
        if found is None:
            return Lookup(key, "missing", None, _missing_message(key, self.tombstone_seconds))
        return Lookup(key, "expired", None, self._gone_message(key, found, now))

    def _gone_message(self, key: str, found: Found, now: float) -> str:
        if found.reason == "evicted":
            what = (f"was evicted to keep the store under {_mib(self.max_bytes)} "
                    f"(stored {_span(now - found.created)} ago)")
        else:
            # kept unused this long: by whoever dropped it (a tombstone), else under this store's TTL
            unused = found.gone - found.accessed if found.gone is not None else self.ttl_seconds
            what = f"has expired (stored {_span(now - found.created)} ago, kept {_span(unused)})"
        again = f"{found.hint} to see it again" if found.hint else "the original text is no longer available"
        return f'ctxmill: deep_expand("{key}") {what}; {again}'

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def decode(body: bytes) -> str:
    return body.decode("utf-8", "surrogatepass")


def clean_hint(hint: str | None) -> str | None:
    """One printable line (it goes into one-line messages), at most HINT_MAX chars."""
    if hint is None:
        return None
    line = " ".join(hint.encode("utf-8", "replace").decode("utf-8").split())
    return line[:HINT_MAX] or None


def _span(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 72 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / DAY:.0f} d"


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


def invalid_key_message(key: object) -> str:
    shown = repr(key)[:48] if isinstance(key, str) else type(key).__name__
    return f"ctxmill: deep_expand({shown}) is not a CCR key (expected 32 lowercase hex characters)"


def _missing_message(key: str, tombstone_seconds: float) -> str:
    return (
        f'ctxmill: deep_expand("{key}") is not in this store '
        f"(never stored here, or gone for more than {_span(tombstone_seconds)})"
    )

