from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("CTXMILL_CORPUS", REPO.parent / "shared" / "corpus"))


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"../shared/corpus is absent ({CORPUS})")
    return CORPUS
