"""The ASGI app: compress on the compressing routes, forward everything, stream responses back.

Per request on a compressing route: read the body (bounded), read its session key
(`identity_memo.IdentityMemo`: a lazy parse of what it adds to its session's last request), send
the bytes to the session's worker process (`WorkerPool`) and wait for the compressed bytes: as long as the run is incremental work, and at
most `latency_budget_ms` once it began an epoch (`within_budget`); then send them (or, past the
budget, the original bytes while the run finishes in the background) upstream with the client's headers, and stream the upstream
response back byte for byte while a `UsageTap` reads the provider's usage. Fail open: a body
that is not a JSON request (invalid JSON, no conversation list), one that continues a
conversation the provider stores (`previous_response_id`), a failed run or a dead worker
sends the original bytes; the provider answers invalid requests itself, exactly as it would
without the proxy. Each compressed request whose answer succeeded is added to the savings ledger
(`ctxmill.ledger`, written in batches off the event loop; the team's in the shared store). The
proxy answers `GET /` (a page linking the dashboard), `GET /favicon.ico` (empty),
`/ctxmill/stats` and the dashboard at `/ctxmill/` itself; they are never forwarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections.abc import AsyncIterator

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount
from starlette.routing import Route as StarletteRoute

from compress.formats.usage import Usage
from ctxmill.paths import sessions_dir, user_ccr_dir
from ctxmill.proxy import browsers, worker
from ctxmill.proxy.books import dashboard, ledger_row, team_ledger
from ctxmill.proxy.identity import client_session
from ctxmill.proxy.identity_memo import IdentityMemo
from ctxmill.proxy.inflight import Held, InflightBytes, NoRoom
from ctxmill.proxy.relay import QuietBreaks, SentOnce, relay
from ctxmill.proxy.routing import COUNT_TOKENS, Route, route
from ctxmill.proxy.sessions import Outcome, ProxySession, SessionPool
from ctxmill.proxy.stats import calibration_of
from ctxmill.proxy.usage_tap import UsageTap
from ctxmill.proxy.window import declared_context_window
from ctxmill.proxy.wire import (
    BodyTooLarge,
    ClientGone,
    ClientTooSlow,
    downstream_headers,
    error_response,
    read_body,
    upstream_failure,
    upstream_headers,
)
from ctxmill.proxy.workerpool import WorkerPool
from ctxmill.proxy_config import ProxyConfig

log = logging.getLogger("ctxmill.proxy")

START_WAIT_FACTOR = 4
"""A request waits for its run to start at most this many latency budgets (100 ms at 25 ms)."""
WARM_START_FACTOR = 20
"""A warm session's request (`ProxySession.warm`) waits for its run to start up to this many
budgets (500 ms at 25 ms): waiting costs milliseconds, going as it is two cache writes."""
INLINE_LIMIT_FACTOR = 40
"""Incremental work is waited for up to this many latency budgets (1 s at 25 ms): only against a
stuck worker; no incremental run on the corpus comes near it."""
EPOCH_WAIT_FACTOR = 2
"""An epoch the session's last one says will take over this many budgets is not waited for."""
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")


class Proxy:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        root = sessions_dir(config.home) if config.persist else None
        self.sessions_root = root
        self.pool = SessionPool(root, config.max_sessions, config.max_stats, config.new_sessions_per_hour)
        self.inflight = InflightBytes(config.max_inflight_bytes, config.client_timeout)
        self.identities = IdentityMemo()
        """Session keys read from what a request adds to its session's last one (the event loop's)."""
        self.client: httpx.AsyncClient | None = None
        self.workers = WorkerPool(worker.WorkerSetup(
            sessions_root=root, ccr_root=(config.ccr_dir or user_ccr_dir()) if config.persist else None,
            ccr_retention=config.ccr, store=config.store,
            compress=config.compress, chain=config.chain, max_sessions=config.max_sessions,
            max_kept_bytes=config.max_inflight_bytes, log_file=config.log_file, log_level=config.log_level,
            save_delay=config.save_delay, idle_seconds=config.idle_seconds), config.workers)
        budget = config.latency_budget_ms
        self.budget = None if budget is None else budget / 1000
        self.start_wait = None if budget is None else START_WAIT_FACTOR * budget / 1000
        """How long a request waits for its worker to start its run (behind other sessions' runs)."""
        self.warm_start_wait = None if budget is None else WARM_START_FACTOR * budget / 1000
        self.inline_limit = None if budget is None else INLINE_LIMIT_FACTOR * budget / 1000
        self.ledger = team_ledger(config)
        """Rows are written in batches off the event loop (ctxmill.ledger.batch)."""

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        c = self.config
        timeout = httpx.Timeout(c.read_timeout, connect=c.connect_timeout)
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
        if self.sessions_root is not None:
            from compress.state.session import prune_sessions
            from memory.summary import CHECKPOINT_FILE

            prune_sessions(self.sessions_root, keep=(CHECKPOINT_FILE,))  # old state goes; checkpoints stay
        self.workers.start()
        async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:
            client.headers.clear()  # forward the client's headers exactly: no user-agent, accept-encoding of httpx's
            self.client = client
            try:
                yield
            finally:
                await self.workers.close()
                self.pool.flush()
                if self.ledger is not None:
                    await asyncio.to_thread(self.ledger.close)  # every row added so far is written

    # -- endpoints ------------------------------------------------------------------

    async def stats(self, request: Request) -> Response:
        if why := browsers.refusal(request.headers):
            log.warning("GET /ctxmill/stats → 403: %s", why)
            return JSONResponse({"error": f"ctxmill proxy: refused: {why}"}, status_code=403)
        sessions = self.pool.snapshot()
        keys = ("requests", "tokens_before", "tokens_after", "saved", "failures", "store_failures", "epochs",
                "deferred", "deferred_behind", "rejected_records", "input_tokens", "cache_read_tokens", "cache_write_tokens",
                "output_tokens")
        totals: dict = {k: sum(s[k] for s in sessions) for k in keys}
        totals["deferred_share"] = round(totals["deferred"] / totals["requests"], 4) if totals["requests"] else 0.0
        store = self.config.store.shown if self.config.store is not None else "embedded"
        return JSONResponse({"sessions": sessions, "totals": totals, "inflight": self.inflight.snapshot(),
                             "store": store, "pid": os.getpid()})

    async def handle(self, request: Request) -> Response:
        started = time.perf_counter()
        target = route(request.method, request.url.path, request.headers, self.config)
        if CONTROL_CHARACTER.search(request.scope["path"]):  # %00, %0a: no URL to forward as sent
            log.info("%s %r → 400: control character in the path", request.method, request.scope["path"])
            return error_response(target.vendor, 400, "invalid_request_error",
                                  "ctxmill proxy: the request path cannot be forwarded: it holds a control character",
                                  close=True)
        if refused := self.refuse(request, target):
            return refused
        held = self.inflight.hold()
        pending: asyncio.Future | None = None
        try:
            raw = await self.read(request, target, held)
            if isinstance(raw, Response):
                return raw
            client = client_session(request.headers)
            key, folder = self.identities.identify(target.shape, raw, client or "") if target.shape else (None, None)
            if key is None:
                return await self.forward(request, target, raw, started)
            if target.kind == COUNT_TOKENS:
                outcome = await self.within_budget(key, worker.count_request, raw, needed=False)
                pending = outcome.pending
                return await self.forward(request, target, outcome.data or raw, started)
            async with self.pool.use(key) as entry:
                outcome = await self.compress(entry, raw, declared_context_window(request.headers.items(), raw))
                entry.record_request(target.shape, len(raw), outcome)
            pending = outcome.pending
            size = len(raw)
            return await self.forward(request, target, outcome.data or raw, started,
                                      on_usage=lambda usage: self.answered(entry, target, outcome, usage, folder,
                                                                           client),
                                      calibrate=lambda usage: self.calibrate(entry, outcome, usage, size),
                                      note=f"session {key[:12]} · {outcome.describe(self.config.latency_budget_ms)}")
        finally:
            held.release_after(pending)  # the body's bytes count until no run still needs them

    def answered(self, entry: ProxySession, target: Route, outcome: Outcome, usage: Usage | None,
                 folder: str | None, client: str | None = None) -> None:
        """A compressed request's successful answer ended: its usage (if reported) goes to the
        session's stats, and the request to the savings ledger (under the client's own session id
        when its headers name one, `identity.client_session`, else the proxy's session key)."""
        if usage is not None:
            entry.record_usage(usage)
        if self.ledger is not None:
            self.ledger.add(ledger_row(client or entry.key, target.vendor, outcome, usage, folder))

    async def calibrate(self, entry: ProxySession, outcome: Outcome, usage: Usage | None, size: int) -> None:
        """The provider's count of the request into the session's state (see ctxmill.proxy.worker),
        before the answer's last bytes go to the client when other replicas share the state, so
        the client's next request, on any replica, is calibrated by it. Nothing to do without a
        usage report or a finished run; a deferred request's run that finished before its answer
        did calibrates by the original bytes sent (`Outcome.sent_tokens`)."""
        sent = outcome.sent_tokens
        if usage is None or not usage.prompt_total or not sent:  # a deferred run done by now counts too
            return
        per_byte = outcome.tokens_per_byte(size)
        wanted = calibration_of(usage.prompt_total, sent, per_byte)
        if wanted is None or (wanted == entry.calibrated and self.config.store is None):
            return  # the state on disk holds it already, and no other replica writes this session's
        job = self.workers.submit(entry.key, worker.calibrate_request, entry.key, usage.prompt_total, sent,
                                  per_byte, first=True)
        job.done.add_done_callback(lambda done: _usage_recorded(done, entry, wanted))
        if self.config.store is not None:  # another replica may get the next request: wait for the write
            with contextlib.suppress(Exception):
                await job.done
        # One process: the session's next run queues behind this job in the same worker anyway.

    def refuse(self, request: Request, target: Route) -> Response | None:
        """The error for a request a web page sent, or for an API body declared as a page's (see
        ctxmill.proxy.browsers); None for the user's agents. The body is not read."""
        if why := browsers.refusal(request.headers):
            status, kind = 403, "permission_error"
        elif target.shape is not None and (why := browsers.simple_body(request.headers)):
            status, kind = 415, "invalid_request_error"
        else:
            return None
        log.warning("%s %s → %d: %s", request.method, request.url.path, status, why)
        return error_response(target.vendor, status, kind, f"ctxmill proxy: refused: {why}", close=True)

    async def read(self, request: Request, target: Route, held: Held) -> bytes | Response:
        """The request body, or the error response when it cannot be read whole."""
        c = self.config
        try:
            return await read_body(request, c.max_body_bytes, held, c.client_timeout)
        except BodyTooLarge:
            return error_response(target.vendor, 413, "request_too_large",
                                  f"ctxmill proxy: request body exceeds {c.max_body_bytes:,} bytes (--max-body-mb)",
                                  close=True)
        except NoRoom as exc:
            log.warning("%s %s → 503: %s", request.method, request.url.path, exc)
            return error_response(target.vendor, 503, "overloaded_error",
                                  f"ctxmill proxy: {exc} (--max-inflight-mb); retry shortly", close=True)
        except ClientTooSlow as exc:
            log.info("%s %s → 408: no body bytes for %g s after %d bytes", request.method, request.url.path,
                     c.client_timeout, exc.args[0])
            return error_response(target.vendor, 408, "request_timeout",
                                  f"ctxmill proxy: no request body bytes for {c.client_timeout:g} s", close=True)
        except ClientGone as exc:
            log.info("%s %s: client disconnected after %d bytes of its request body", request.method,
                     request.url.path, exc.args[0])
            return Response(status_code=400)  # nobody is left to read it

    # -- compression ------------------------------------------------------------------

    async def compress(self, entry: ProxySession, raw: bytes, context_window: int | None = None) -> Outcome:
        """The request's compression, waited for within the latency budget (`within_budget`).
        A run that misses it goes on in the background and records its stats when done; while it
        runs, the session's requests are sent as they are (a session never queues a second
        background run). A run that had not even started when its request left is dropped unrun
        (`needed=False`): the session's next request decides its messages with its own, as a
        replica that never saw it would; so a busy worker does not go on to run requests already
        sent, which would keep the session's next ones waiting behind them. A warm session (its
        last request went compressed) waits longer for its run to start (`WARM_START_FACTOR`):
        sent as it is, it would cost the provider's cache two writes of the whole prompt."""
        if entry.pending is not None:
            return Outcome(deferred=True)
        outcome = await self.within_budget(entry.key, worker.compress_request, entry.key, raw,
                                           entry.stats_bytes(), context_window, entry.directory is not None,
                                           needed=False, epoch_estimate=entry.epoch_estimate(len(raw)),
                                           start_wait=self.warm_start_wait if entry.warm else self.start_wait)
        if outcome.deferred and outcome.pending is not None:
            entry.pending = outcome.pending

            size = len(raw)

            def finished(future: asyncio.Future) -> None:
                entry.pending = None
                if not future.cancelled():  # dropped unrun: nothing ran, nothing failed
                    entry.record_run(size, outcome)

            entry.pending.add_done_callback(finished)
        return outcome

    async def within_budget(self, key: str, fn, *args, needed: bool = True, epoch_estimate: float = 0.0,
                            start_wait: float | None = None) -> Outcome:
        """Run `fn(*args)` in the session's worker; an Outcome filled in when it finishes (now,
        or later in the background when it misses the budget: `deferred`, with `pending` set).
        The budget adapts to the work: incremental work is always waited for (up to
        `inline_limit`, against a stuck worker), and the budget counts from when the run says it
        began an epoch (`Submitted.epoch`: a whole new plan, 10-30 times an incremental run), so
        only epochs are deferred, never a request because the machine is slow. Nor does the time
        a request waits behind other sessions' runs (at most `start_wait`) defer it; a worker so
        far behind that the run would not start within `start_wait` (its queue times its jobs'
        moving average time) defers the request at once, as does an epoch expected to take over
        `EPOCH_WAIT_FACTOR` budgets (`epoch_estimate` seconds, from the session's last epoch):
        waiting the budget for it would add the budget to the request and still send it as is.
        `needed`: the run must happen even after its request left (see WorkerPool); `start_wait`:
        how long this request may wait for its run to start (default `self.start_wait`)."""
        outcome = Outcome()
        start_wait = self.start_wait if start_wait is None else start_wait
        hopeless = start_wait is not None and self.workers.expected_wait(key) > start_wait
        job = self.workers.submit(key, fn, *args, wait=0 if hopeless else start_wait, needed=needed)
        job.done.add_done_callback(lambda f: _fill(outcome, f))
        if self.budget is None:
            await asyncio.wait({job.done})
            return outcome
        first = asyncio.FIRST_COMPLETED
        if not hopeless:  # a worker this far behind would not start it in time: no wait for nothing
            await asyncio.wait({job.started, job.done}, timeout=start_wait, return_when=first)
        if job.started.done():
            await asyncio.wait({job.done, job.epoch}, timeout=self.inline_limit, return_when=first)
            if job.epoch.done() and not job.done.done() and epoch_estimate <= EPOCH_WAIT_FACTOR * self.budget:
                await asyncio.wait({job.done}, timeout=self.budget)
        if job.done.cancelled():  # dropped unrun while the request waited for it to start
            outcome.deferred = outcome.behind = True
        elif not job.done.done():
            outcome.deferred, outcome.pending = True, job.done
            outcome.behind = not job.started.done()
        return outcome

    # -- forwarding -----------------------------------------------------------------

    async def forward(self, request: Request, target: Route, content: bytes, started: float,
                      on_usage=None, calibrate=None, note: str = "") -> Response:
        assert self.client is not None
        path = request.url.path
        url = target.upstream + path + (f"?{request.url.query}" if request.url.query else "")
        headers = upstream_headers(request.headers.items(), identity_encoding=on_usage is not None)
        if content:  # sent as it came: with its length, not chunked
            headers.append(("content-length", str(len(content))))
        upstream = self.client.build_request(request.method, url, headers=headers,
                                             content=SentOnce(content) if content else b"")
        try:
            response = await self.client.send(upstream, stream=True)
        except httpx.HTTPError as exc:
            status, message = upstream_failure(exc, httpx.URL(target.upstream).host, self.config.read_timeout)
            log.warning("%s %s → %d: %s", request.method, path, status, message)
            return error_response(target.vendor, status, "api_error", f"ctxmill proxy: {message}")
        log.info("%s %s → %d in %.1f ms%s", request.method, path, response.status_code,
                 (time.perf_counter() - started) * 1000, f" · {note}" if note else "")
        tap = None
        if on_usage is not None and target.shape and response.headers.get("content-encoding", "identity") == "identity":
            event_stream = response.headers.get("content-type", "").startswith("text/event-stream")
            tap = UsageTap(target.shape, event_stream)
        out = StreamingResponse(relay(response, tap, on_usage, calibrate), status_code=response.status_code)
        out.raw_headers = downstream_headers(response.headers.raw)
        return out


def _usage_recorded(future: asyncio.Future, entry: ProxySession, calibration: tuple[float, float]) -> None:
    """`entry.calibrated` is what the session's state at its place holds, as far as this process knows."""
    if future.cancelled():
        return
    if (exc := future.exception()) is not None:
        log.warning("usage not recorded: %s: %s", type(exc).__name__, exc)  # the next request uses the estimate
    entry.calibrated = calibration if exc is None and future.result() else None


def _fill(outcome: Outcome, future: asyncio.Future) -> None:
    """Fill `outcome` from a finished worker call (a dead worker is replaced on its next use)."""
    if future.cancelled():  # dropped unrun: its request had left already
        return
    if (exc := future.exception()) is not None:  # the worker died or the job could not be sent
        log.warning("compression failed, original sent: %s: %s", type(exc).__name__, exc)
        outcome.error = f"{type(exc).__name__}: {exc}"[:500]
    else:
        outcome.summary = future.result()


HOME_PAGE = ('<!doctype html><meta charset="utf-8"><title>ctxmill proxy</title>'
             '<p>ctxmill proxy is running. <a href="/ctxmill/">See what it saved</a>.</p>')


async def home(request: Request) -> Response:
    """`GET /`: a page of its own, never forwarded (the upstream has nothing there)."""
    return HTMLResponse(HOME_PAGE)


class _ControlCharacterGuard:
    """A path holding a control character reaches no route of the proxy's own but its 400:
    Starlette's `$` matches before a trailing newline, so `/%0a` would otherwise be `/`."""

    def __init__(self, app, proxy: Proxy) -> None:
        self.app, self.proxy = app, proxy

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and CONTROL_CHARACTER.search(scope.get("path", "")):
            response = await self.proxy.handle(Request(scope, receive))
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(config: ProxyConfig) -> Starlette:
    uvicorn_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietBreaks) for f in uvicorn_log.filters):
        uvicorn_log.addFilter(QuietBreaks())
    proxy = Proxy(config)
    app = Starlette(routes=[
        StarletteRoute("/", home, methods=["GET"]),
        StarletteRoute("/favicon.ico", lambda request: Response(status_code=204), methods=["GET"]),  # a page asks
        StarletteRoute("/ctxmill/stats", proxy.stats, methods=["GET"]),
        StarletteRoute("/ctxmill", lambda request: RedirectResponse("/ctxmill/"), methods=["GET"]),
        Mount("/ctxmill", dashboard(config)),
        StarletteRoute("/{path:path}", proxy.handle, methods=METHODS),
    ], middleware=[Middleware(_ControlCharacterGuard, proxy=proxy)], lifespan=proxy.lifespan)
    app.state.proxy = proxy
    return app
