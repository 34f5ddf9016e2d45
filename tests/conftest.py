from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.redis_fixture import redis_server  # noqa: F401 - a real redis-server, shared by the run

# CI runs are derandomized so a submission's result does not depend on the seed; developers get
# fresh random examples on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("CTXMILL_CORPUS", REPO.parent / "shared" / "corpus"))


@pytest.fixture(scope="session", autouse=True)
def private_global_home(tmp_path_factory):
    """The global home (the user's CCR store, global memory) of every test and every process it
    starts is a temporary folder, never the developer's ~/.local/share/ctxmill."""
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    yield
    if before is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = before


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"../shared/corpus is absent ({CORPUS})")
    return CORPUS
