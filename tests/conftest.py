from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.redis_fixture import TEST_KEY, redis_server  # noqa: F401 - a real redis-server, shared by the run

# CI runs are derandomized so a submission's result does not depend on the seed; developers get
# fresh random examples on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("CTXMILL_CORPUS", REPO.parent / "shared" / "corpus"))


AUTOSTART = "CTXMILL_PROXY_AUTOSTART"  # ctxmill.always_on.AUTOSTART_ENV (not imported: conftest stays light)
STORE_KEY = "CTXMILL_STORE_KEY"  # ctxmill.shared_store.KEY_ENV


@pytest.fixture(scope="session", autouse=True)
def private_global_home(tmp_path_factory):
    """The global home (the user's CCR store, global memory) of every test and every process it
    starts is a temporary folder, never the developer's ~/.local/share/ctxmill; and no hook or MCP
    server a test starts launches the always-on proxy (a test that installs a client would
    otherwise leave one on the default port for every later test): the tests of always-on
    compression turn it back on for themselves; every shared store they name is signed with the
    tests' store key."""
    saved = {name: os.environ.get(name) for name in ("XDG_DATA_HOME", AUTOSTART, STORE_KEY)}
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    os.environ[AUTOSTART] = "0"
    os.environ[STORE_KEY] = TEST_KEY.decode()  # the team's store key of every --store the tests give
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"../shared/corpus is absent ({CORPUS})")
    return CORPUS
