"""The `[ccr]` table of the user's config.toml sets the CCR store's TTL and size cap for every face
(a project's `[ccr]` is ignored: tests/trust/test_trust_retention.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ccr.store import DAY, Retention
from ctxmill.errors import ConfigError
from ctxmill.settings import Settings

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def user_home(tmp_path, monkeypatch):
    """This test's own global home, where the user's config.toml lives."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    (tmp_path / "data" / "ctxmill").mkdir(parents=True)
    return tmp_path / "data" / "ctxmill"


def settings(tmp_path, toml: str) -> Settings:
    (tmp_path / "data" / "ctxmill" / "config.toml").write_text(toml)
    return Settings.load(tmp_path)


def test_defaults_without_a_table(tmp_path):
    assert settings(tmp_path, "").ccr == Retention() == Retention(DAY, 512 * 2**20)


def test_ttl_and_size_cap_reach_every_store(tmp_path):
    s = settings(tmp_path, "[ccr]\nttl_hours = 72\nmax_mb = 64.5\n")
    assert s.ccr == Retention(ttl_seconds=72 * 3600, max_bytes=int(64.5 * 2**20))
    assert s.checkpoint.ccr_retention == s.ccr
    with s.open_ccr() as store:
        assert (store.ttl_seconds, store.max_bytes) == (72 * 3600, int(64.5 * 2**20))
        assert store.stats().ttl_seconds == 72 * 3600


@pytest.mark.parametrize(("toml", "message"), [
    ("[ccr]\nttl_days = 2\n", "unknown key ccr.ttl_days"),
    ("[ccr]\nttl_hours = 0\n", "ccr.ttl_hours must be positive"),
    ('[ccr]\nmax_mb = "big"\n', "ccr.max_mb must be a number"),
])
def test_a_bad_table_is_one_clear_error(tmp_path, toml, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        settings(tmp_path, toml).ccr


def test_expand_answers_with_the_configured_ttl(tmp_path):
    with settings(tmp_path, "[ccr]\nttl_hours = 0.0001\n").open_ccr() as store:
        key = store.put("original text")
    import time

    time.sleep(0.5)  # past the 0.36 s TTL
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path)}  # the same user store and config
    done = subprocess.run([sys.executable, "-m", "ctxmill", "expand", key], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 1 and "has expired" in done.stderr and "kept 0 s" in done.stderr
