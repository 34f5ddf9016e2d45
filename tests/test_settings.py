from __future__ import annotations

from pathlib import Path

import pytest

from compress.config import CompressConfig
from compress.tiers import TierThresholds
from ctxmill.errors import ConfigError
from ctxmill.settings import Settings


def test_missing_file_means_defaults(tmp_path):
    assert Settings.load(tmp_path).compress == CompressConfig()


def test_every_setting_reaches_the_typed_config(tmp_path):
    (tmp_path / "config.toml").write_text('''
[compress]
epoch_savings_threshold = 5000
min_saving_fraction = 1
protect_tail_blocks = 6
disabled_stages = ["strip_injections"]
protected_tools = ["MyTool"]
[compress.tiers]
medium = 10000
high = 20000
[compress.model_tiers."gpt-4o-mini"]
medium = 1000
high = 2000
[compress.stages.strip_injections]
tags = ["system-reminder", "env"]
''')
    config = Settings.load(tmp_path).compress
    assert config.epoch_savings_threshold == 5000 and config.min_saving_fraction == 1.0
    assert config.protect_tail_blocks == 6
    assert config.disabled_stages == {"strip_injections"}
    assert "mytool" in config.protected_tools and "edit" in config.protected_tools
    assert config.tiers == TierThresholds(10_000, 20_000)
    assert config.model_tiers["gpt-4o-mini"] == TierThresholds(1_000, 2_000)
    assert config.options("strip_injections")["tags"] == ["system-reminder", "env"]


def test_the_documented_config_examples_load(tmp_path, monkeypatch):
    """docs/configuration.md's examples ([compress], [memory], [map]; [ccr] and [proxy] in the
    user's own file; [security]) are valid config files, and a project's [proxy] is not taken."""
    page = (Path(__file__).parent.parent / "docs" / "configuration.md").read_text()
    example = page.split("```toml\n[compress]\n", 1)[1].split("```", 1)[0]
    (tmp_path / "config.toml").write_text("[compress]\n" + example)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "ctxmill").mkdir(parents=True)
    user = page.split("```toml\n[ccr]", 1)[1].split("```", 1)[0].replace("512", "300")
    (tmp_path / "xdg" / "ctxmill" / "config.toml").write_text("[ccr]" + user)
    settings = Settings.load(tmp_path)
    config = settings.compress
    assert config.window_epoch_savings == 1000 and config.window_start_min_tokens == 200
    assert config.cache_ttl == "auto"
    assert config.options("trim_outputs")["cold_scale"] == 0.2 and config.options("trim_outputs")["cold_after_turns"] == 30
    assert config.options("supersede_inputs")["settled_after_turns"] == 12
    assert settings.memory.recency == 0.2 and settings.repomap.budget == 512
    assert settings.ccr.max_bytes == 300 * 2**20
    proxy, security = ("".join(page.split(f"```toml\n[{table}]\n", 1)[1].split("```", 1)[0].join(
        [f"[{table}]\n", "\n"])) for table in ("proxy", "security"))
    (tmp_path / "config.toml").write_text(proxy + security)  # a project's: [proxy], allow ignored
    settings = Settings.load(tmp_path)
    assert settings.proxy_overrides == {}
    assert settings.redaction == {"redact_extra": ("INTERNAL-[0-9]{6}",), "redact_allow": ()}
    (tmp_path / "xdg" / "ctxmill" / "config.toml").write_text(proxy + security)  # the user's own
    settings = Settings.load(tmp_path)
    assert settings.proxy_overrides["latency_budget_ms"] == 25 and settings.proxy_overrides["workers"] == 2
    assert settings.proxy_overrides["max_inflight_bytes"] == 256 * 2**20
    assert settings.proxy_overrides["upstream_anthropic"] == "https://gateway.example/anthropic"
    assert settings.redaction["redact_allow"] == ("AKIAIOSFODNN7EXAMPLE",)


@pytest.mark.parametrize("text, message", [
    ("[compress]\nbogus = 1", "unknown key compress.bogus"),
    ("[compress]\nprotect_tail_tokens = 'many'", "must be an integer"),
    ("[compress]\ncache_ttl = '2h'", "cache_ttl must be auto, 5m or 1h"),
    ("[compress.tiers]\nmedium = 9\nhigh = 3", "0 < medium <= high"),
    ("[compress", "config.toml"),
])
def test_bad_config_is_one_clear_error(tmp_path, text, message):
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        Settings.load(tmp_path).compress


def test_memory_table_sets_the_recency_of_the_memory_config(tmp_path):
    from memory.config import MemoryConfig

    assert Settings.load(tmp_path).memory.recency == MemoryConfig(tmp_path, tmp_path).recency == 0.2
    (tmp_path / "config.toml").write_text("[memory]\nrecency = 0\n")
    assert Settings.load(tmp_path).memory.recency == 0.0


@pytest.mark.parametrize("text, message", [
    ("[memory]\nrecency = 1.5", "memory.recency must be between 0 and 1"),
    ("[memory]\nrecency = 'old'", "memory.recency must be a number"),
    ("[memory]\nhalf_life = 3", "unknown key memory.half_life"),
])
def test_bad_memory_table_is_one_clear_error(tmp_path, text, message):
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        Settings.load(tmp_path).memory
