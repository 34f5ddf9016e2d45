"""Fixtures for the end-to-end tests with the real clients (see clients.py).

The clients are installed once into a cache prefix; a test whose client cannot be installed or
run here is skipped with the reason. `CTXMILL_E2E=0` skips them all.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e import clients
from tests.e2e.scenarios import make_project
from tests.e2e.standin import ServerThread, Standin


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: drives a real agent client (installed from npm) against the stand-in")


def _client(name: str) -> clients.Client:
    if os.environ.get("CTXMILL_E2E") == "0":
        pytest.skip("CTXMILL_E2E=0")
    try:
        return clients.ensure(name)
    except clients.Unavailable as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def claude_code() -> clients.Client:
    return _client("claude-code")


@pytest.fixture(scope="session")
def codex() -> clients.Client:
    return _client("codex")


@pytest.fixture(scope="session")
def opencode() -> clients.Client:
    return _client("opencode")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def serve(tmp_path: Path):
    """serve(script) → a running ServerThread whose `.standin` records into tmp_path/requests."""
    servers = []

    def start(script, **kw) -> ServerThread:
        srv = ServerThread(Standin(script, record_dir=tmp_path / "requests", **kw))
        servers.append(srv.__enter__())
        return srv

    yield start
    for srv in servers:
        srv.__exit__(None, None, None)
