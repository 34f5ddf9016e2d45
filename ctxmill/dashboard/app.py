"""The dashboard's HTTP side: the page, its static files and a small JSON API, as one ASGI app
served by `ctxmill dashboard` and mounted by the proxy at `/ctxmill/`.

Routes (relative to where it is mounted): `GET /` the page; `GET /static/NAME`; `GET api/summary`
(`ctxmill.ledger.report.summary`, what `ctxmill stats --json` prints; `?since=&until=` in seconds
since the epoch restrict it to a time range); `GET api/session?id=`
(one session's requests); `GET api/memory?q=` (search, or every entry, plus the pinned ones and
the last checkpoint); `POST api/memory/pin` `{id, pinned}` and `POST api/memory/forget` `{id}`.
Must hold: every answer is computed from the files at request time (the ledger and memory are
written by other processes); a request that reached a loopback address and names another host (a
DNS-rebound name: the page, its token and its API read by a stranger's page) is refused before any
route (`ctxmill.proxy.browsers.LoopbackHost`, wherever the app is served); the write actions refuse a request that is cross-site
(`Sec-Fetch-Site` other than same-origin/none, or an `Origin` other than the page's own) or
lacks this process's token (`X-Ctxmill-Token`, which only the page served here carries).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ctxmill.proxy.browsers import LoopbackHost

if TYPE_CHECKING:
    from ctxmill.settings import Settings

STATIC = {"chart.umd.min.js": "text/javascript", "dashboard.js": "text/javascript", "dashboard.css": "text/css",
          "chart.js-LICENSE.md": "text/plain"}
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
TOKEN_HEADER = "x-ctxmill-token"


def asset(name: str) -> str:
    """A file of the page (static/NAME), as text."""
    return files("ctxmill.dashboard").joinpath("static", name).read_text("utf-8")


def page(token: str = "", data_json: str = "", inline: bool = False) -> str:
    """The page: served (`token` set, data fetched from the API) or standalone (`data_json`
    embedded and every script inlined, for `ctxmill replay --html`)."""
    html = asset("page.html").replace("{{TOKEN}}", token)
    if not inline:
        return html.replace("{{HEAD}}", '<link rel="stylesheet" href="static/dashboard.css">'
                                        '<script src="static/chart.umd.min.js"></script>'
                                        '<script src="static/dashboard.js" defer></script>').replace("{{DATA}}", "")
    head = (f"<style>{asset('dashboard.css')}</style><script>{asset('chart.umd.min.js')}</script>"
            f"<script>{asset('dashboard.js')}</script>")
    safe = data_json.replace("<", "\\u003c")  # no "</script>" inside the JSON can end its tag
    return html.replace("{{HEAD}}", head).replace(
        "{{DATA}}", f'<script type="application/json" id="ctxmill-data">{safe}</script>')


def _same_origin(request: Request) -> bool:
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


def time_range(query) -> tuple[float | None, float | None] | None:
    """(since, until) from a query's `since` and `until` (absent or empty: unbounded); None when
    one is not a finite number."""
    import math

    out: list[float | None] = []
    for name in ("since", "until"):
        text = query.get(name) or ""
        try:
            value = float(text) if text else None
        except ValueError:
            return None
        if value is not None and not math.isfinite(value):
            return None
        out.append(value)
    return out[0], out[1]


def create_app(ledger_path: Callable[[], Path], settings: Callable[[], Settings], token: str | None = None) -> Starlette:
    """The dashboard app. `ledger_path()` and `settings()` are read on each request (`settings()`
    gives the `ctxmill.settings.Settings` whose memory the browser shows)."""
    token = token or secrets.token_urlsafe(24)

    def respond(body, status: int = 200, media: str | None = None) -> Response:
        response = JSONResponse(body, status) if media is None else Response(body, status, media_type=media)
        response.headers.update(SECURITY_HEADERS)
        return response

    async def index(request: Request) -> Response:
        return respond(page(token), media="text/html; charset=utf-8")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return respond({"error": "not found"}, 404)
        return respond(asset(name), media=STATIC[name] + "; charset=utf-8")

    def read_ledger(fn):
        from ctxmill.ledger.store import Ledger, LedgerError

        try:
            with Ledger.open(ledger_path()) as ledger:
                return respond(fn(ledger))
        except LedgerError as exc:
            return respond({"error": str(exc)}, 500)

    async def summary(request: Request) -> Response:
        from ctxmill.ledger.report import summary as rollup

        bounds = time_range(request.query_params)
        if bounds is None:
            return respond({"error": "since and until are seconds since the epoch"}, 400)
        return read_ledger(lambda ledger: rollup(ledger, since=bounds[0], until=bounds[1]))

    async def session(request: Request) -> Response:
        from ctxmill.ledger.report import session_requests

        key = request.query_params.get("id", "")
        return read_ledger(lambda ledger: {"session": key, "requests": session_requests(ledger, key)})

    async def memory(request: Request) -> Response:
        from ctxmill.dashboard.memory_view import view
        from ctxmill.errors import ConfigError

        try:
            return respond(view(settings(), request.query_params.get("q", "")))
        except ConfigError as exc:
            return respond({"error": str(exc)}, 500)

    def write(action):
        async def handle(request: Request) -> Response:
            if not _same_origin(request) or not secrets.compare_digest(request.headers.get(TOKEN_HEADER, ""), token):
                return respond({"error": "refused: not a request from this dashboard's page"}, 403)
            try:
                payload = await request.json()
            except ValueError:
                return respond({"error": "body is not JSON"}, 400)
            if not isinstance(payload, dict) or not isinstance(payload.get("id"), str):
                return respond({"error": "expected {\"id\": ...}"}, 400)
            from ctxmill.errors import ConfigError
            from memory.api import NotFound

            try:
                return respond(action(settings().memory, payload))
            except NotFound as exc:
                return respond({"error": str(exc)}, 404)
            except ConfigError as exc:
                return respond({"error": str(exc)}, 500)
        return handle

    def pin(cfg, payload: dict) -> dict:
        from memory.api import set_pinned

        return set_pinned(cfg, payload["id"], bool(payload.get("pinned", True))).to_dict()

    def forget(cfg, payload: dict) -> dict:
        from memory.api import forget as forget_entry

        return forget_entry(cfg, payload["id"]).to_dict()

    app = Starlette(routes=[
        Route("/", index, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/api/summary", summary, methods=["GET"]),
        Route("/api/session", session, methods=["GET"]),
        Route("/api/memory", memory, methods=["GET"]),
        Route("/api/memory/pin", write(pin), methods=["POST"]),
        Route("/api/memory/forget", write(forget), methods=["POST"]),
    ], middleware=[Middleware(LoopbackHost)])
    app.state.token = token
    return app
