"""The ASGI app: compress on the compressing routes, forward everything, stream responses back.

Per request on a compressing route: read the body (bounded), read its session key
(`identity.request_key`, a lazy parse), send the bytes to the session's worker process
(`WorkerPool`) and wait for the compressed bytes at most `latency_budget_ms`; then send them (or, past the budget, the original bytes while the
run finishes in the background) upstream with the client's headers, and stream the upstream
response back byte for byte while a `UsageTap` reads the provider's usage. Fail open: a body
that is not a JSON request (invalid JSON, no conversation list), one that continues a
conversation the provider stores (`previous_response_id`), a failed run or a dead worker
sends the original bytes; the provider answers invalid requests itself, exactly as it would
without the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import AsyncIterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route as StarletteRoute

from ctxmill.logs import log_file
from ctxmill.paths import sessions_dir, user_ccr_dir
from ctxmill.proxy import worker
from ctxmill.settings import ProxyConfig
from ctxmill.proxy.identity import request_key
from ctxmill.proxy.routing import COUNT_TOKENS, Route, route
from ctxmill.proxy.sessions import Outcome, ProxySession, SessionPool
from ctxmill.proxy.usage_tap import UsageTap
from ctxmill.proxy.workerpool import WorkerPool
from ctxmill.proxy.wire import (BodyTooLarge, declared_context_window, downstream_headers, error_response, read_body,
                                upstream_headers)

log = logging.getLogger("ctxmill.proxy")

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


class Proxy:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        root = sessions_dir(config.home) if config.persist else None
        self.sessions_root = root
        self.pool = SessionPool(root, config.max_sessions, config.max_stats)
        self.client: httpx.AsyncClient | None = None
        self.workers = WorkerPool(worker.WorkerSetup(
            sessions_root=root, ccr_root=(config.ccr_dir or user_ccr_dir()) if config.persist else None,
            ccr_retention=config.ccr,
            compress=config.compress, chain=config.chain, max_sessions=config.max_sessions,
            log_file=log_file()), config.workers)
        budget = config.latency_budget_ms
        self.budget = None if budget is None else budget / 1000

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        c = self.config
        timeout = httpx.Timeout(c.read_timeout, connect=c.connect_timeout)
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
        if self.sessions_root is not None:
            from compress.session import prune_sessions

            prune_sessions(self.sessions_root)  # old sessions' state goes (age and count limits)
        self.workers.start()
        async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:
            self.client = client
            try:
                yield
            finally:
                await self.workers.close()
                self.pool.flush()

    # -- endpoints ------------------------------------------------------------------

    async def stats(self, request: Request) -> Response:
        sessions = self.pool.snapshot()
        keys = ("requests", "tokens_before", "tokens_after", "saved", "failures", "epochs", "deferred", "input_tokens",
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
            return error_response(target.vendor, 413, "request_too_large",
                                  f"ctxmill proxy: request body exceeds {limit:,} bytes (--max-body-mb)")
        key = request_key(target.shape, raw) if target.shape else None
        if key is None:
            return await self.forward(request, target, raw, started)
        if target.kind == COUNT_TOKENS:
            outcome = await self.within_budget(key, worker.count_request, raw, needed=False)
            return await self.forward(request, target, outcome.data or raw, started)
        async with self.pool.use(key) as entry:
            stand_in = None if entry.stats.calibration is not None else self.pool.stand_in(target.shape)
            outcome = await self.compress(entry, raw, entry.calibrated_tokens(len(raw), stand_in),
                                          declared_context_window(request.headers.items()))
            entry.record_request(target.shape, len(raw), outcome)
        return await self.forward(request, target, outcome.data or raw, started,
                                  on_usage=lambda usage: entry.record_usage(usage, outcome.sent_tokens),
                                  note=f"session {key[:12]} · {self.describe(outcome)}")

    # -- compression ------------------------------------------------------------------

    async def compress(self, entry: ProxySession, raw: bytes, calibrated_tokens: int | None,
                       context_window: int | None = None) -> Outcome:
        """The request's compression, waited for at most the latency budget. Past it the run goes
        on in the background and records its stats when done; while it runs, the session's
        requests are sent as they are (a session never queues a second background run)."""
        if entry.pending is not None:
            return Outcome(deferred=True)
        outcome = await self.within_budget(entry.key, worker.compress_request, entry.key, raw,
                                           calibrated_tokens, entry.stats_bytes(), context_window)
        if outcome.deferred and outcome.pending is not None:
            entry.pending = outcome.pending

            def finished(_: asyncio.Future) -> None:
                entry.pending = None
                entry.record_run(len(raw), outcome)

            entry.pending.add_done_callback(finished)
        return outcome

    async def within_budget(self, key: str, fn, *args, needed: bool = True) -> Outcome:
        """Run `fn(*args)` in the session's worker; an Outcome filled in when it finishes (now,
        or later in the background when it misses the budget: `deferred`, with `pending` set).
        `needed`: the run must happen even after its request left (see WorkerPool)."""
        outcome = Outcome()
        future = self.workers.submit(key, fn, *args, budget=self.budget, needed=needed)
        future.add_done_callback(lambda f: _settle(outcome, f))
        done, _ = await asyncio.wait({future}, timeout=self.budget)
        if not done:
            outcome.deferred, outcome.pending = True, future
        return outcome

    def describe(self, outcome: Outcome) -> str:
        if outcome.deferred and outcome.pending is None:
            return "deferred: sent as is while the session's previous run finishes"
        if outcome.deferred:
            return f"deferred: compression not done within {self.config.latency_budget_ms:g} ms, sent as is"
        if outcome.summary is None or outcome.error:
            return f"passed through unchanged: {outcome.error}"
        return outcome.summary.line

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
            return error_response(target.vendor, 502, "api_error",
                                  f"ctxmill proxy: upstream unreachable ({type(exc).__name__})")
        log.info("%s %s → %d in %.1f ms%s", request.method, path, response.status_code,
                 (time.perf_counter() - started) * 1000, f" · {note}" if note else "")
        tap = None
        if on_usage is not None and response.headers.get("content-encoding", "identity") == "identity":
            event_stream = response.headers.get("content-type", "").startswith("text/event-stream")
            tap = UsageTap(target.shape, event_stream)
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


def _settle(outcome: Outcome, future: asyncio.Future) -> None:
    """Fill `outcome` from a finished worker call (a dead worker is replaced on its next use)."""
    if future.cancelled():  # dropped unrun: its request had left already
        return
    if (exc := future.exception()) is not None:  # the worker died or the job could not be sent
        log.warning("compression failed, original sent: %s: %s", type(exc).__name__, exc)
        outcome.error = f"{type(exc).__name__}: {exc}"[:500]
    else:
        outcome.summary = future.result()


def create_app(config: ProxyConfig) -> Starlette:
    proxy = Proxy(config)
    app = Starlette(routes=[
        StarletteRoute("/ctxmill/stats", proxy.stats, methods=["GET"]),
        StarletteRoute("/{path:path}", proxy.handle, methods=METHODS),
    ], lifespan=proxy.lifespan)
    app.state.proxy = proxy
    return app
