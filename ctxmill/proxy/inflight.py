"""The request bodies the proxy holds at once, bounded in total, and memory given back after.

Every body is counted from its first byte until the upstream has received it and no
compression run still needs it (`Held.release`). Must hold:
- The sum of what is held never exceeds `limit`: a body that would cross it waits for room,
  at most `wait` seconds, then `NoRoom` (the app answers 503 with the reason).
- A body that is larger than `limit` on its own is never admitted (the app caps bodies at
  `max_body_bytes`, which the settings keep ≤ the limit).
- Once the bodies released since the last time add up to `TRIM_AFTER_BYTES` (one large body, or
  a few dozen of a long conversation's), freed heap memory is handed back to the operating
  system (`give_back_memory`: glibc keeps freed heap pages otherwise, and a process that parses
  a 1 MB body per request grows by what fragments: 20 MiB over 300 such requests in a worker,
  7 MiB with the trims; a no-op elsewhere).
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
from collections.abc import Callable
from typing import Literal

log = logging.getLogger("ctxmill.proxy")

TRIM_AFTER_BYTES = 8 * 2**20
"""Once bodies adding up to this many bytes were released since the last time, freed memory is
handed back (see `give_back_memory`; `ReleasedBytes`) …"""
TRIM_DELAY = 1.0
"""… this many seconds later, when the request that held it has finished (one trim at a time)."""


class NoRoom(Exception):
    """No room for a body within the wait."""


class InflightBytes:
    def __init__(self, limit: int, wait: float) -> None:
        self.limit = limit
        self.wait = wait
        self.held = 0
        self.peak = 0
        self.refused = 0
        self._room = asyncio.Condition()
        self._trim: asyncio.TimerHandle | None = None
        self._released = ReleasedBytes()

    def hold(self) -> Held:
        """A new body's account, empty until it grows."""
        return Held(self)

    async def _take(self, size: int) -> None:
        if size > self.limit:
            self.refused += 1
            raise NoRoom(f"a request body of {size:,} bytes is larger than the proxy's in-flight limit")
        async with self._room:
            try:
                await asyncio.wait_for(self._room.wait_for(lambda: self.held + size <= self.limit), self.wait)
            except TimeoutError:
                self.refused += 1
                raise NoRoom(f"{self.held / 2**20:,.1f} MB of request bodies in flight, no room for "
                             f"{size / 2**20:,.1f} MB more within {self.wait:g} s") from None
            self.held += size
            self.peak = max(self.peak, self.held)

    def _give(self, size: int) -> None:
        self.held -= size

        async def wake() -> None:
            async with self._room:
                self._room.notify_all()

        asyncio.ensure_future(wake())
        if self._released.add(size) and self._trim is None:  # once the body's last references are gone
            self._trim = asyncio.get_running_loop().call_later(TRIM_DELAY, self._trimmed)

    def _trimmed(self) -> None:
        self._trim = None
        give_back_memory()

    def snapshot(self) -> dict[str, int]:
        return {"held_bytes": self.held, "peak_bytes": self.peak, "limit_bytes": self.limit,
                "refused": self.refused}


class Held:
    """One body's share of the in-flight bytes."""

    def __init__(self, account: InflightBytes) -> None:
        self.account = account
        self.size = 0
        self._released = False

    async def grow(self, size: int) -> None:
        """Take `size` more bytes (waits for room; NoRoom past the wait)."""
        await self.account._take(size)
        self.size += size

    def release(self) -> None:
        """Give the bytes back (once; later calls do nothing)."""
        if not self._released:
            self._released = True
            self.account._give(self.size)

    def release_after(self, future: asyncio.Future | None) -> None:
        """Release now, or when `future` (a compression run still using the body) is done."""
        if future is None or future.done():
            self.release()
        else:
            future.add_done_callback(lambda _: self.release())


class ReleasedBytes:
    """The bytes of the bodies a process let go of since it last handed memory back."""

    def __init__(self) -> None:
        self.since_trim = 0

    def add(self, size: int) -> bool:
        """Count `size` more; True (and the count starts again) when it is time to hand memory
        back (`TRIM_AFTER_BYTES`)."""
        self.since_trim += size
        if self.since_trim < TRIM_AFTER_BYTES:
            return False
        self.since_trim = 0
        return True


_malloc_trim: Callable[[int], int] | Literal[False] | None = None  # libc's malloc_trim once looked up; False: none


def give_back_memory() -> None:
    """Return freed heap memory to the OS (glibc `malloc_trim`); elsewhere nothing to do."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            _malloc_trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)
