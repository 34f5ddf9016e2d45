"""Run the proxy under uvicorn. Binds to loopback unless remote access is asked for explicitly."""

from __future__ import annotations

import ipaddress
import logging
import socket

from ctxmill.settings import ProxyConfig


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


def uvicorn_config(config: ProxyConfig, host: str, port: int, log_level: str = "info"):
    """Access logging is off: the proxy logs its own one line per request (no query, no headers)."""
    import uvicorn

    from ctxmill.proxy.app import create_app

    return uvicorn.Config(create_app(config), host=host, port=port, access_log=False,
                          log_level=log_level, server_header=False, date_header=False,
                          timeout_graceful_shutdown=5)


def serve(config: ProxyConfig, host: str, port: int, log_level: str = "info") -> None:
    import uvicorn

    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.INFO),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # it logs full upstream URLs, queries included
    uvicorn.Server(uvicorn_config(config, host, port, log_level)).run()
