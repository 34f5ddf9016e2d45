"""Who may use the proxy and the dashboard: the user's agents and the user's own browser tab, never
another web page.

The proxy and the dashboard listen on loopback, and any page the user opens can send them
requests: a cross-origin `POST` with a "simple" content type (text/plain, a form) goes out with
no CORS preflight, and a DNS-rebound name (evil.example resolving to 127.0.0.1) reaches them as
if same-origin, so that page can read the answers. Agents (SDKs, CLIs, node's fetch) send none of
what a browser sends, so what must hold:
- a request that reached a loopback address names a loopback host (`Host`: 127.0.0.1, [::1],
  `localhost` or a name under `.localhost`, any port) or none; any other is refused (403) before
  anything is read or served (`LoopbackHost`, around the whole dashboard app wherever it is
  served, and around the whole proxy when it listens on loopback: a gateway listening on other
  addresses is named as its clients know it);
- a request that carries `Origin`, or `Sec-Fetch-Site` other than "none" (a navigation the
  person typed), or `Sec-Fetch-Mode` "no-cors" or "navigate" from a page, is refused (403)
  on every route, the proxy's own `/ctxmill/stats` included; node's fetch sends
  `Sec-Fetch-Mode: cors` alone, which is allowed;
- on the API routes (those whose body the proxy reads), a body declared with a content type a
  page may send without a preflight (text/plain, a form) is refused (415): SDKs declare JSON.
Refusals are decided from headers only, before the body is read, and name the header.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping

SIMPLE_NAVIGATION = "none"
"""`Sec-Fetch-Site` of a request the person started (typed URL, bookmark): not a page's."""
PAGE_MODES = ("no-cors", "navigate", "nested-navigate")


def refusal(headers: Mapping[str, str]) -> str | None:
    """Why the request comes from a web page (None: it does not)."""
    if "origin" in headers:
        return "it carries an Origin header (a web page sent it)"
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() != SIMPLE_NAVIGATION:
        return f"Sec-Fetch-Site is {site[:40]!r} (a web page sent it)"
    mode = (headers.get("sec-fetch-mode") or "").strip().lower()
    if mode in PAGE_MODES and site is None:
        return f"Sec-Fetch-Mode is {mode!r} (a web page sent it)"
    return None


SIMPLE_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")
"""The content types a page may POST cross-origin without a CORS preflight."""


def simple_body(headers: Mapping[str, str]) -> str | None:
    """Why an API request's body looks like a page's simple request (None: it does not)."""
    declared = headers.get("content-type", "")
    if declared.split(";", 1)[0].strip().lower() in SIMPLE_TYPES:
        return f"its body is declared {declared[:60]!r}, as a web page's form or text post"
    return None


def _hostname(host: str) -> str:
    """The name in a Host header, without its port or brackets, lowercased."""
    host = host.strip().lower()
    if host.startswith("["):
        address, _, rest = host[1:].partition("]")
        return address if rest == "" or rest[:1] == ":" and rest[1:].isdigit() else host
    name, _, port = host.rpartition(":")
    return name if name and port.isdigit() else host


def _loopback_name(name: str) -> bool:
    name = name.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True  # RFC 6761: always loopback, never resolved through DNS by browsers
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def foreign_host(host: str | None, server_address: str | None) -> str | None:
    """Why a request that reached `server_address` (the listening address) names a host it must
    not (a DNS-rebound name); None when it may."""
    if host is None or server_address is None or not _loopback_name(server_address):
        return None
    if _loopback_name(_hostname(host)):
        return None
    return f"its Host {host[:80]!r} is not this machine's loopback address (a web page's DNS-rebound name)"


class LoopbackHost:
    """ASGI middleware: `foreign_host` refused with 403 (a JSON error every client shows) before
    the app sees the request."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            host = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"host"), None)
            server = scope.get("server")
            if why := foreign_host(host, server[0] if server else None):
                import logging

                logging.getLogger("ctxmill.proxy").warning("%s %s → 403: %s", scope.get("method"),
                                                           scope.get("path", "")[:200], why)
                body = json.dumps({"type": "error", "error": {"type": "permission_error",
                                                              "message": f"ctxmill: refused: {why}"}}).encode()
                await send({"type": "http.response.start", "status": 403, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
