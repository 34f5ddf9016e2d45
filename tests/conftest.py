from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs are derandomized so a submission's result does not depend on the seed; developers get
# fresh random examples on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("CTXMILL_CORPUS", REPO.parent / "shared" / "corpus"))


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"../shared/corpus is absent ({CORPUS})")
    return CORPUS
