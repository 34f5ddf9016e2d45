"""Shared paths for the memory tests."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The jieba dictionary cache takes about a second to build; share one across tests.
JIEBA_CACHE = Path(os.environ.get("CTXMILL_TEST_CACHE", "/tmp/ctxmill-test-cache"))

