"""Who may use the proxy: the user's agents, never a web page.

The proxy listens on loopback, and any page the user opens can send it requests: a cross-origin
`POST` with a "simple" content type (text/plain, a form) goes out with no CORS preflight, and a
DNS-rebound name reaches it as if same-origin. Agents (SDKs, CLIs, node's fetch) send none of
what a browser sends, so what must hold:
- a request that carries `Origin`, or `Sec-Fetch-Site` other than "none" (a navigation the
  person typed), or `Sec-Fetch-Mode` "no-cors" or "navigate" from a page, is refused (403)
  on every route, the proxy's own `/ctxmill/stats` included; node's fetch sends
  `Sec-Fetch-Mode: cors` alone, which is allowed;
- on the API routes (those whose body the proxy reads), a body declared with a content type a
  page may send without a preflight (text/plain, a form) is refused (415): SDKs declare JSON.
Refusals are decided from headers only, before the body is read, and name the header.
"""

from __future__ import annotations

from typing import Mapping

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
