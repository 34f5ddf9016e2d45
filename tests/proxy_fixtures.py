"""Pytest fixtures for the proxy over real HTTP on 127.0.0.1: a fake upstream (one per module)
and proxies in front of it, served exactly as `ctxmill proxy` serves them
(`ctxmill.proxy.server.uvicorn_options`). Import the fixtures a test module uses."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from compress.config import CompressConfig
from compress.tiers import TierThresholds
from ctxmill.proxy import create_app
from ctxmill.proxy.server import uvicorn_options
from ctxmill.proxy_config import ProxyConfig
from tests.fake_upstream import FakeUpstream, ServerThread
from tests.proxy_stages import CHAIN

# Small tail, tiers and epoch threshold so every stage runs on the small example conversation.
SMALL = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1, epoch_savings_threshold=300,
                       tiers=TierThresholds(medium=1000, high=2000))
# No epochs after a session's first run: later runs render only their new messages.
NO_EPOCHS = replace(SMALL, epoch_savings_threshold=10**9, window_epoch_savings=10**9, tiers=TierThresholds())


def serve_proxy(config: ProxyConfig) -> ServerThread:
    """A started proxy thread (the caller exits it)."""
    return ServerThread(create_app(config), **uvicorn_options(config)).__enter__()


@pytest.fixture(scope="module")
def upstream():
    fake = FakeUpstream()
    with ServerThread(fake.app()) as server:
        fake.url = server.url
        yield fake


@pytest.fixture
def fake(upstream):
    upstream.received.clear()
    upstream.sent.clear()
    upstream.replies.clear()
    return upstream


@pytest.fixture
def start_proxy(upstream, tmp_path):
    """Start a proxy (in memory unless `home` is given) in front of the fake upstream."""
    running: list[ServerThread] = []

    def start(**options) -> ServerThread:
        options.setdefault("persist", "home" in options)
        options.setdefault("latency_budget_ms", None)  # compression always awaited: no timing in asserts
        options.setdefault("upstream_anthropic", upstream.url)
        options.setdefault("upstream_openai", upstream.url)
        config = ProxyConfig(compress=options.pop("compress", SMALL), chain=options.pop("chain", CHAIN), **options)
        server = serve_proxy(config)
        running.append(server)
        return server

    yield start
    for server in running:
        server.__exit__(None, None, None)


@pytest.fixture
def proxy(start_proxy):
    return start_proxy()


@pytest.fixture
def server_log(caplog):
    """caplog at INFO; it sees uvicorn's records too (ServerThread leaves uvicorn's loggers
    propagating)."""
    caplog.set_level(logging.INFO)
    return caplog


def tracebacks(caplog) -> list[str]:
    """The records that carry a traceback."""
    return [r.getMessage() for r in caplog.records if r.exc_info]
