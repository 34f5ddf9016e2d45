"""The shared store is one setting every face reads the same way: --store, CTXMILL_STORE, the user's config."""

from __future__ import annotations

import pytest

from ctxmill.errors import ConfigError
from ctxmill.settings import Settings
from ground.redis_client import StoreAddress, StoreAddressError
from tests.redis_fixture import TEST_KEY


@pytest.fixture
def homes(tmp_path, monkeypatch):
    project, user = tmp_path / "project", tmp_path / "xdg"
    project.mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(user))
    monkeypatch.delenv("CTXMILL_STORE", raising=False)
    (user / "ctxmill").mkdir(parents=True)
    return project, user / "ctxmill"


def test_flag_then_environment_then_the_users_config(homes, monkeypatch):
    project, user = homes
    assert Settings.load(project).store is None
    (user / "config.toml").write_text('[store]\nurl = "redis://cfg:6379/0"\nprefix = "team-a:"\n')
    key = TEST_KEY
    assert Settings.load(project).store == StoreAddress("redis://cfg:6379/0", "team-a:", key)
    monkeypatch.setenv("CTXMILL_STORE", "redis://env:6379/1")
    assert Settings.load(project).store == StoreAddress("redis://env:6379/1", "team-a:", key)
    flagged = Settings.load(project, store="redis://flag:1/2?prefix=x:").store
    assert flagged == StoreAddress("redis://flag:1/2", "x:", key)


def test_a_shared_store_needs_the_teams_key_from_the_environment_or_a_private_file(homes, monkeypatch, tmp_path):
    import os

    project, user = homes
    monkeypatch.delenv("CTXMILL_STORE_KEY")
    with pytest.raises(ConfigError, match="CTXMILL_STORE_KEY or \\[store\\] key_file"):
        Settings.load(project, store="redis://team:6379/0").store
    key_file = tmp_path / "team.key"
    key_file.write_text("k" * 40 + "\n")
    (user / "config.toml").write_text(f'[store]\nkey_file = "{key_file}"\n')
    os.chmod(key_file, 0o644)
    with pytest.raises(ConfigError, match="must be yours and private"):
        Settings.load(project, store="redis://team:6379/0").store
    os.chmod(key_file, 0o600)
    assert Settings.load(project, store="redis://team:6379/0").store.key == b"k" * 40
    monkeypatch.setenv("CTXMILL_STORE_KEY", "short")
    with pytest.raises(ConfigError, match="at least 16"):
        Settings.load(project, store="redis://team:6379/0").store


def test_the_store_key_never_shows_in_the_address():
    address = StoreAddress.parse("redis://db:6379/0").with_key(b"very-secret-team-key-123")
    assert "very-secret" not in repr(address) and "very-secret" not in address.shown


def test_a_project_config_may_not_name_a_store(homes, caplog):
    """Refused with a warning (ctxmill.provenance): the user's store, or none, is used."""
    project, user = homes
    (project / "config.toml").write_text('[store]\nurl = "redis://evil.example:6379/0"\n')
    with caplog.at_level("WARNING", logger="ctxmill.settings"):
        assert Settings.load(project).store is None
    assert "[store] url ignored" in caplog.text
    (user / "config.toml").write_text('[store]\nurl = "redis://cfg:6379/0"\n')
    assert Settings.load(project).store.url == StoreAddress.parse("redis://cfg:6379/0").url


@pytest.mark.parametrize("bad", ['[store]\nurl = 5\n', '[store]\nhost = "x"\n', '[store]\nurl = "http://x"\n'])
def test_bad_store_settings_are_one_line_errors(homes, bad):
    project, user = homes
    (user / "config.toml").write_text(bad)
    with pytest.raises(ConfigError):
        Settings.load(project).store


def test_the_password_never_shows_and_other_schemes_are_refused():
    address = StoreAddress.parse("redis://app:s3cr3t-pw@db.internal:6380/0?prefix=t:&ssl_cert_reqs=none")
    assert address.prefix == "t:" and "prefix" not in address.url and "ssl_cert_reqs=none" in address.url
    assert "s3cr3t-pw" not in address.shown and "db.internal:6380" in address.shown
    with pytest.raises(StoreAddressError) as refused:
        StoreAddress.parse("https://app:s3cr3t-pw@db.internal/")
    assert "s3cr3t-pw" not in str(refused.value)


def test_a_checkpoint_stores_its_originals_in_the_shared_store(tmp_path, redis_server):
    from dataclasses import replace

    from ccr.expand import expand_first
    from ccr.markers import find_markers
    from memory.checkpoint import write_checkpoint
    from tests.redis_fixture import fresh_address
    from tests.test_checkpoint import _cfg, _session

    address = fresh_address(redis_server)
    cfg = replace(_cfg(tmp_path), ccr_store=address)
    result = write_checkpoint(cfg, _session(), "s1")
    keys = [m.key for m in find_markers(result.markdown)]
    assert keys and all(expand_first([], k, shared=address).ok for k in keys)
    assert not (cfg.ccr_dir / "ccr.sqlite3").exists()  # nothing went to the embedded store
