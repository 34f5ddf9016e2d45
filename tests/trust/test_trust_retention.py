"""One project's config.toml cannot shorten the retention of the store every project shares (the
red team's `[ccr] ttl_hours = 0.0001` in one project made 12 of 12 keys of another unresolvable,
and the message said "kept 24 h")."""

from __future__ import annotations

import logging
import time

import pytest

from ccr.store import DAY, CCRStore, Retention
from ctxmill.settings import Settings


@pytest.fixture
def two_projects(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    hostile, mine = tmp_path / "cloned" / ".ctxmill", tmp_path / "mine" / ".ctxmill"
    hostile.mkdir(parents=True)
    mine.mkdir(parents=True)
    (hostile / "config.toml").write_text("[ccr]\nttl_hours = 0.0001\nmax_mb = 0.001\n")
    return hostile, mine


def test_a_projects_ccr_table_is_ignored_with_one_warning(two_projects, caplog):
    hostile, _ = two_projects
    with caplog.at_level(logging.WARNING, logger="ctxmill.settings"):
        retention = Settings.load(hostile).ccr
    assert retention == Retention() == Retention(DAY, 512 * 2**20)
    warnings = [r.getMessage() for r in caplog.records if r.name == "ctxmill.settings"]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert "[ccr] ttl_hours, [ccr] max_mb ignored" in warnings[0]


def test_another_projects_settings_never_expire_my_originals(two_projects):
    hostile, mine = two_projects
    with Settings.load(mine).open_ccr() as store:
        keys = [store.put(f"original {i}") for i in range(12)]
    an_hour_later = time.time() + 3600
    theirs = Settings.load(hostile)
    with CCRStore(theirs.ccr_dir, retention=theirs.ccr, clock=lambda: an_hour_later) as store:
        store.put("their text " * 100)  # the cloned project stores something: its sweep runs
    with Settings.load(mine).open_ccr() as store:
        assert all(store.get(k).ok for k in keys)


def test_the_users_config_sets_the_retention_for_every_project(two_projects, tmp_path):
    hostile, mine = two_projects
    (tmp_path / "data" / "ctxmill").mkdir(parents=True, exist_ok=True)
    (tmp_path / "data" / "ctxmill" / "config.toml").write_text("[ccr]\nttl_hours = 48\n")
    assert Settings.load(mine).ccr.ttl_seconds == Settings.load(hostile).ccr.ttl_seconds == 48 * 3600


def test_the_expiry_message_tells_how_long_it_was_really_kept(tmp_path):
    now = [0.0]
    with CCRStore(tmp_path, retention=Retention(ttl_seconds=60), clock=lambda: now[0]) as short:
        key = short.put("original", hint="re-run it")
        now[0] = 120.0
        short.put("later")  # its sweep drops the first after 2 min unused
    with CCRStore(tmp_path, clock=lambda: now[0]) as reader:  # this reader's TTL is 24 h
        message = reader.get(key).message
    assert "has expired" in message and "kept 2 min" in message and "24 h" not in message
