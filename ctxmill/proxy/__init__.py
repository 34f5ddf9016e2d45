"""The API proxy face: every Anthropic / OpenAI request passes through the per-turn transform.

`create_app(ProxyConfig(...))` (ProxyConfig: `ctxmill.proxy_config`) is a Starlette ASGI app;
`listen(host, port)` binds its socket and `serve(config, sock, host, port)` runs it under
uvicorn. Modules: `routing` (which upstream, which
route compresses), `wire` (headers, bodies, provider-shaped errors), `connections` (how long and
how many client connections may wait for their request), `inflight` (the request bytes held at
once, and memory given back), `identity` (session keys),
`usage_tap` (provider-reported token usage, read from JSON and SSE without buffering), `sessions`
(per-session stats and turn-taking on the event loop), `stats` (the run summary and the stats file
both sides share), `worker` (what runs in a worker process: the pipeline and the sessions' state,
calibration included), `workerpool` (the worker processes, session affinity and scheduling),
`relay` (the upstream's answer to the client), `books` (ledger rows and the dashboard), `app`
(the ASGI app), `server` (uvicorn runner and the loopback rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxmill.proxy_config import ProxyConfig


def create_app(config: ProxyConfig):
    """The ASGI app (imported lazily: Starlette and httpx load only when the proxy runs)."""
    from ctxmill.proxy.app import create_app as _create

    return _create(config)
