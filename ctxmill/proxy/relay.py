"""The upstream's answer, relayed to the client byte for byte (from `ctxmill.proxy.app`).

`relay(response, tap, on_usage, calibrate)` yields the upstream's bytes as they arrive while a
`UsageTap` reads the provider's usage; each chunk goes on when the next one arrives, so the last
one is held until `calibrate(usage)` is done (the session's calibration, `ctxmill.proxy.worker`): a
client cannot send its next request before the state that request needs is written. `on_usage`
runs when the stream ends or breaks. An answer that breaks off mid-body raises `UpstreamBroke`,
which ends the client's response the same way (never a complete-looking short one).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx

from ctxmill.proxy.usage_tap import UsageTap

log = logging.getLogger("ctxmill.proxy")


class SentOnce(httpx.AsyncByteStream):
    """A request body that is forgotten once sent: the answer may stream for minutes, and the
    body's memory must not stay with it."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        data, self.data = self.data, b""
        yield data


class UpstreamBroke(Exception):
    """The upstream's answer broke off mid-body. Raised from the relay, it ends the client's
    response the same way (uvicorn closes the connection without finishing the body), so the
    client sees a broken answer, never a complete-looking short one."""


class QuietBreaks(logging.Filter):
    """Drops uvicorn's traceback for an UpstreamBroke: the relay logged it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], UpstreamBroke))


async def relay(response: httpx.Response, tap: UsageTap | None, on_usage, calibrate=None) -> AsyncIterator[bytes]:
    """The upstream bytes as they arrive; usage is recorded when the stream ends or breaks. Each
    chunk goes on when the next arrives, so the last one is held until `calibrate(usage)` (the
    session's calibration, ctxmill.proxy.worker) is done: a client cannot send its next request
    before the state it needs is written."""
    relayed, held = 0, None
    try:
        async for chunk in response.aiter_raw():
            if tap is not None:
                tap.feed(chunk)
            relayed += len(chunk)
            if held is not None:
                yield held
            held = chunk
        if calibrate is not None and tap is not None and response.is_success:
            await calibrate(tap.finish())
        if held is not None:
            yield held
    except httpx.HTTPError as exc:
        log.warning("upstream %s answer broke off after %d bytes (%s); the client's answer is cut off too",
                    response.url.host, relayed, type(exc).__name__)
        raise UpstreamBroke() from None
    finally:
        await response.aclose()
        usage = tap.finish() if tap is not None else None
        if on_usage is not None and response.is_success:
            on_usage(usage)
