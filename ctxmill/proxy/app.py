"""The ASGI app: compress on the compressing routes, forward everything, stream responses back.

Per request on a compressing route: read the body (bounded), parse it, find the session, run
the pipeline in a worker thread under the session's lock, send the result upstream with the
client's headers, and stream the upstream response back byte for byte while a `UsageTap`
reads the provider's usage. Fail open: a body that is not a JSON request (invalid JSON, no
`messages` list) or a compression failure sends the original bytes; the provider answers
invalid requests itself, exactly as it would without the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import AsyncIterator

import anyio
import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route as StarletteRoute

from ccr.store import CCRStore
from compress.adapters import InvalidRequest, detect
from ctxmill.paths import ccr_dir, sessions_dir
from ctxmill.proxy.config import ProxyConfig
from ctxmill.proxy.identity import session_key
from ctxmill.proxy.routing import COUNT_TOKENS, Route, route
from ctxmill.proxy.sessions import Outcome, SessionPool, compress_once
from ctxmill.proxy.usage import UsageTap
from ctxmill.proxy.wire import BodyTooLarge, downstream_headers, error_response, read_body, upstream_headers

log = logging.getLogger("ctxmill.proxy")

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


class Proxy:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        root = sessions_dir(config.home) if config.persist else None
        self.pool = SessionPool(root, config.max_sessions, config.max_stats)
        self.client: httpx.AsyncClient | None = None
        self.cpu: anyio.CapacityLimiter | None = None
        """Bounds the pipeline runs at once (ProxyConfig.pipeline_threads): a burst of new
        sessions is worked off a few at a time instead of all sharing the GIL at once."""
        self.store: CCRStore | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        c = self.config
        timeout = httpx.Timeout(c.read_timeout, connect=c.connect_timeout)
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
        self.store = CCRStore(ccr_dir(c.home)) if c.persist else CCRStore.in_memory()
        self.cpu = anyio.CapacityLimiter(c.pipeline_threads)
        async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:
            self.client = client
            try:
                yield
            finally:
                await self.pool.flush()
                self.store.close()

    # -- endpoints ------------------------------------------------------------------

    async def stats(self, request: Request) -> Response:
        sessions = self.pool.snapshot()
        keys = ("requests", "tokens_before", "tokens_after", "saved", "failures", "input_tokens",
                "cache_read_tokens", "cache_write_tokens", "output_tokens")
        totals = {k: sum(s[k] for s in sessions) for k in keys}
        return JSONResponse({"sessions": sessions, "totals": totals})

    async def handle(self, request: Request) -> Response:
        started = time.perf_counter()
        target = route(request.method, request.url.path, request.headers, self.config)
        try:
            raw = await read_body(request, self.config.max_body_bytes)
        except BodyTooLarge:
            limit = self.config.max_body_bytes
            return error_response(target.provider, 413, "request_too_large",
                                  f"ctxmill proxy: request body exceeds {limit:,} bytes (--max-body-mb)")
        body = _parse_request(raw) if target.kind else None
        if body is None:
            return await self.forward(request, target, raw, started)
        if target.kind == COUNT_TOKENS:
            data = await anyio.to_thread.run_sync(_count_body, body, self.config, limiter=self.cpu)
            return await self.forward(request, target, data or raw, started)
        key = session_key(target.provider, body)
        async with self.pool.use(key) as entry:
            outcome: Outcome = await anyio.to_thread.run_sync(
                lambda: entry.compress(body, len(raw), store=self.store, config=self.config.compress,
                                      chain=self.config.chain), limiter=self.cpu)
            entry.record_run(target.provider, len(raw), outcome)
            entry.saving = asyncio.ensure_future(anyio.to_thread.run_sync(entry.persist))
        report = outcome.report
        sent = report.tokens_after if report and not outcome.error else 0
        note = report.summary_line() if report else f"passed through unchanged: {outcome.error}"
        return await self.forward(request, target, outcome.data or raw, started,
                                  on_usage=lambda usage: entry.record_usage(usage, sent),
                                  note=f"session {key[:12]} · {note}")

    # -- forwarding -----------------------------------------------------------------

    async def forward(self, request: Request, target: Route, content: bytes, started: float,
                      on_usage=None, note: str = "") -> Response:
        assert self.client is not None
        path = request.url.path
        url = target.upstream + path + (f"?{request.url.query}" if request.url.query else "")
        headers = upstream_headers(request.headers.items(), identity_encoding=on_usage is not None)
        upstream = self.client.build_request(request.method, url, headers=headers, content=content)
        try:
            response = await self.client.send(upstream, stream=True)
        except httpx.HTTPError as exc:
            log.warning("%s %s → 502: upstream %s unreachable (%s)", request.method, path,
                        httpx.URL(target.upstream).host, type(exc).__name__)
            return error_response(target.provider, 502, "api_error",
                                  f"ctxmill proxy: upstream unreachable ({type(exc).__name__})")
        log.info("%s %s → %d in %.1f ms%s", request.method, path, response.status_code,
                 (time.perf_counter() - started) * 1000, f" · {note}" if note else "")
        tap = None
        if on_usage is not None and response.headers.get("content-encoding", "identity") == "identity":
            event_stream = response.headers.get("content-type", "").startswith("text/event-stream")
            tap = UsageTap(target.provider, event_stream)
        out = StreamingResponse(_relay(response, tap, on_usage), status_code=response.status_code)
        out.raw_headers = downstream_headers(response.headers.raw)
        return out


async def _relay(response: httpx.Response, tap: UsageTap | None, on_usage) -> AsyncIterator[bytes]:
    """The upstream bytes as they arrive; usage is recorded when the stream ends or breaks."""
    try:
        async for chunk in response.aiter_raw():
            if tap is not None:
                tap.feed(chunk)
            yield chunk
    finally:
        await response.aclose()
        usage = tap.finish() if tap is not None else None
        if usage is not None and response.is_success:
            on_usage(usage)


def _parse_request(raw: bytes) -> dict | None:
    """The parsed body if it is a request the transform can read, else None (sent as is)."""
    try:
        body = orjson.loads(raw)
        detect(body)
    except (orjson.JSONDecodeError, InvalidRequest):
        return None
    return body


def _count_body(body: dict, config: ProxyConfig) -> bytes | None:
    try:
        return compress_once(body, config.compress, config.chain)
    except Exception as exc:  # noqa: BLE001 - fail open
        log.warning("count_tokens: compression failed, original sent: %s", type(exc).__name__)
        return None


def create_app(config: ProxyConfig) -> Starlette:
    proxy = Proxy(config)
    app = Starlette(routes=[
        StarletteRoute("/ctxmill/stats", proxy.stats, methods=["GET"]),
        StarletteRoute("/{path:path}", proxy.handle, methods=METHODS),
    ], lifespan=proxy.lifespan)
    app.state.proxy = proxy
    return app
