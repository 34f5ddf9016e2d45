"""The suite's own guards (tests/conftest.py): every test runs with private homes, and a write
below a guarded folder is named."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import GUARDED, HOMES, REAL_HOME, REPO, new_writes


def test_every_home_a_test_sees_is_a_temporary_folder(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    for name in HOMES:
        assert Path(os.environ[name]).is_relative_to(base), name
    assert Path.home() != REAL_HOME and Path.home().is_relative_to(base)
    assert REPO / ".ctxmill" in GUARDED and len(GUARDED) == 2  # and the real user's ctxmill data folder


def test_a_write_below_a_guarded_folder_is_named_once(tmp_path):
    guarded = tmp_path / "guarded"
    roots = (guarded,)
    assert new_writes(roots) == []  # takes stock
    (guarded / "sessions").mkdir(parents=True)
    ledger = guarded / "ledger.sqlite3"
    ledger.write_text("x")
    assert new_writes(roots) == [str(ledger)]
    assert new_writes(roots) == []
    ledger.write_text("xy")
    log = guarded / "sessions" / "ctxmill.log"
    log.write_text("a proxy line\n")
    assert new_writes(roots) == [str(ledger), str(log)]
    ledger.unlink()
    assert new_writes(roots) == [str(ledger)]
