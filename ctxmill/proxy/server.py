"""Run the proxy under uvicorn. Binds to loopback unless remote access is asked for explicitly; on
loopback every request must name a loopback host (`ctxmill.proxy.browsers.LoopbackHost`)."""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import socket
from typing import Any

from ctxmill.proxy_config import ProxyConfig

log = logging.getLogger("ctxmill.proxy")

SPARE_DESCRIPTORS = 64
"""File descriptors kept for everything but connections: workers, logs, stores, the listener."""


def is_loopback(host: str) -> bool:
    """True when every address `host` resolves to is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def uvicorn_options(config: ProxyConfig) -> dict[str, Any]:
    """How uvicorn serves the proxy: its HTTP protocol bound by the client limits
    (ctxmill.proxy.connections); access logging off (the proxy logs one line per request, no
    query, no headers); websocket upgrades never taken by uvicorn itself (`ws="none"`: with a
    websocket library installed, e.g. by LiteLLM, uvicorn would answer them instead of the
    proxy forwarding them untouched)."""
    from ctxmill.proxy.connections import ClientLimits, guarded_protocol

    return {"http": guarded_protocol(ClientLimits(config.client_timeout, config.max_connections)),
            "access_log": False, "server_header": False, "date_header": False, "timeout_graceful_shutdown": 5,
            "ws": "none"}


def fit_descriptors(config: ProxyConfig) -> ProxyConfig:
    """`config` with max_connections the process's file descriptors can hold: each client
    connection may need one to the upstream too. Raises the soft limit toward the hard one first."""
    import resource

    needed = 2 * config.max_connections + SPARE_DESCRIPTORS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return config
    fitting = max(1, (soft - SPARE_DESCRIPTORS) // 2)
    log.warning("max_connections lowered from %d to %d: the open-file limit is %d", config.max_connections, fitting, soft)
    return dataclasses.replace(config, max_connections=fitting)


def served_app(config: ProxyConfig, host: str):
    """The proxy's app as it is served on `host`: on loopback, behind the Host check of
    `ctxmill.proxy.browsers.LoopbackHost` (a DNS-rebound name is refused on every route)."""
    from ctxmill.proxy.app import create_app
    from ctxmill.proxy.browsers import LoopbackHost

    app = create_app(config)
    return LoopbackHost(app) if is_loopback(host) else app


def uvicorn_config(config: ProxyConfig, host: str, port: int, log_level: str = "info"):
    import uvicorn

    return uvicorn.Config(served_app(config, host), host=host, port=port, log_level=log_level,
                          **uvicorn_options(config))


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port, bound before anything says the proxy is up. OSError when it
    cannot be bound (errno EADDRINUSE: another program listens there)."""
    family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: restart over TIME_WAIT
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def serve(config: ProxyConfig, sock: socket.socket, host: str, port: int, log_level: str = "info") -> None:
    """Serve on `sock` (from `listen(host, port)`) until stopped; logs to stderr and
    `config.log_file` (its workers too)."""
    import uvicorn

    from ctxmill.logs import configure_server_logging

    configure_server_logging(log_level, config.log_file)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # it logs full upstream URLs, queries included
    uvicorn.Server(uvicorn_config(fit_descriptors(config), host, port, log_level)).run(sockets=[sock])
