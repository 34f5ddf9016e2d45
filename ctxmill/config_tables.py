"""config.toml tables -> typed values, each error a `ConfigError` that names the file and key.

`ctxmill.settings.Settings` reads a table through these when a face first asks for it; they
hold every key's type, range and default, and nothing else (no file but the one `read_config`
is given, no environment).
"""

from __future__ import annotations

import math
from pathlib import Path

from ctxmill.errors import ConfigError

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (a memory search reads settings)
if TYPE_CHECKING:
    from typing import Any

    from ccr.store import Retention
    from compress.config import CompressConfig
    from compress.tiers import TierThresholds
    from repomap.config import RepoMapConfig

CONFIG_FILE = "config.toml"
UPSTREAM_KEYS = ("upstream_anthropic", "upstream_openai")
"""`[proxy]` keys naming where the proxy forwards (ProxyConfig fields of the same names)."""
_SCALARS = {"epoch_savings_threshold": int, "window_epoch_savings": int, "window_start_min_tokens": int,
            "epoch_horizon": float, "cache_window_blocks": int, "protect_tail_tokens": int,
            "protect_tail_turns": int, "protect_tail_blocks": int, "min_saving_fraction": float,
            "min_saving_chars": int, "trials_after_answer_from": int}


def read_config(home: Path) -> dict[str, Any]:
    """`<home>/config.toml` as parsed ({} when there is none), read bounded
    (`ground.home_files`: a regular file of at most CONFIG_BYTES inside `home`); ConfigError
    naming the file when it is refused or unparsable."""
    from ground.home_files import CONFIG_BYTES, read_home_file

    path = home / CONFIG_FILE
    try:
        data = read_home_file(home, CONFIG_FILE, CONFIG_BYTES)
        text = "" if data is None else data.decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not text:
        return {}
    import tomllib  # only a project with a config file pays for the parser

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def security_table(section: Any, where: str) -> dict[str, tuple[str, ...]]:
    table = _table(section, f"{where}: security")
    unknown = set(table) - {"redact_extra", "redact_allow"}
    if unknown:
        raise ConfigError(f"{where}: unknown key security.{sorted(unknown)[0]}")
    lists = {}
    for key in ("redact_extra", "redact_allow"):
        lists[key] = tuple(_strings(table.get(key, []), f"{where}: security.{key}"))
        if lists[key]:
            import regex  # compiled only when a project lists patterns
        for pattern in lists[key]:
            try:
                regex.compile(pattern)
            except regex.error as exc:
                raise ConfigError(f"{where}: security.{key}: bad regex {pattern!r}: {exc}") from None
    return lists


def memory_table(section: Any, where: str) -> dict[str, float | int]:
    """The `[memory]` table as MemoryConfig field overrides: `recency`, a number in [0, 1], and
    `inject_chars`, the session-start memory budget, a whole number of characters (0 or more)."""
    table = _table(section, f"{where}: memory")
    kinds = {"recency": float, "inject_chars": int}
    if set(table) - set(kinds):
        raise ConfigError(f"{where}: unknown key memory.{sorted(set(table) - set(kinds))[0]}")
    out = {key: _typed(value, kinds[key], f"{where}: memory.{key}") for key, value in table.items()}
    if not 0.0 <= out.get("recency", 0.0) <= 1.0:
        raise ConfigError(f"{where}: memory.recency must be between 0 and 1, got {table['recency']!r}")
    if out.get("inject_chars", 0) < 0:
        raise ConfigError(f"{where}: memory.inject_chars must be 0 or more, got {table['inject_chars']!r}")
    return out


def ccr_table(section: Any, where: str) -> Retention:
    from ccr.store import Retention

    table = _table(section, f"{where}: ccr")
    unknown = set(table) - {"ttl_hours", "max_mb"}
    if unknown:
        raise ConfigError(f"{where}: unknown key ccr.{sorted(unknown)[0]}")
    values = {key: _typed(table[key], float, f"{where}: ccr.{key}") for key in table}
    for key, value in values.items():
        if not value > 0:
            raise ConfigError(f"{where}: ccr.{key} must be positive, got {table[key]!r}")
    default = Retention()
    return Retention(ttl_seconds=values.get("ttl_hours", default.ttl_seconds / 3600) * 3600,
                     max_bytes=int(values.get("max_mb", default.max_bytes / 2**20) * 2**20))


def proxy_table(section: Any, where: str) -> dict[str, Any]:
    """latency_budget_ms "none" becomes None (always wait)."""
    table = _table(section, f"{where}: proxy")
    unknown = set(table) - {"latency_budget_ms", "workers", "max_inflight_mb", "max_connections", "client_timeout",
                            "new_sessions_per_hour", *UPSTREAM_KEYS}
    if unknown:
        raise ConfigError(f"{where}: unknown key proxy.{sorted(unknown)[0]}")
    out: dict[str, Any] = {}
    for key in UPSTREAM_KEYS:
        if key in table:
            out[key] = _origin(table[key], f"{where}: proxy.{key}")
    if "latency_budget_ms" in table:
        try:
            out["latency_budget_ms"] = parse_budget(table["latency_budget_ms"])
        except ValueError as exc:
            raise ConfigError(f"{where}: proxy.latency_budget_ms {exc}") from None
    if "workers" in table:
        out["workers"] = _typed(table["workers"], int, f"{where}: proxy.workers")
        if out["workers"] < 1:
            raise ConfigError(f"{where}: proxy.workers must be at least 1")
    if "max_inflight_mb" in table:
        out["max_inflight_bytes"] = int(_positive(table["max_inflight_mb"], f"{where}: proxy.max_inflight_mb") * 2**20)
    if "max_connections" in table:
        out["max_connections"] = _typed(table["max_connections"], int, f"{where}: proxy.max_connections")
        if out["max_connections"] < 1:
            raise ConfigError(f"{where}: proxy.max_connections must be at least 1")
    if "new_sessions_per_hour" in table:
        out["new_sessions_per_hour"] = _typed(table["new_sessions_per_hour"], int, f"{where}: proxy.new_sessions_per_hour")
        if out["new_sessions_per_hour"] < 0:
            raise ConfigError(f"{where}: proxy.new_sessions_per_hour must be at least 0")
    if "client_timeout" in table:
        out["client_timeout"] = float(_positive(table["client_timeout"], f"{where}: proxy.client_timeout"))
    return out


def _origin(value: Any, where: str) -> str:
    """An http(s) URL without a trailing slash (the request path is appended to it)."""
    from urllib.parse import urlsplit

    if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).hostname:
        raise ConfigError(f"{where} must be an http(s) URL, got {value!r}")
    return value.rstrip("/")


def _positive(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigError(f"{where} must be a positive number, got {value!r}")
    return value


def parse_budget(value: Any) -> float | None:
    """A latency budget in ms: a positive number, or "none" (None: always wait)."""
    if value == "none":
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f'must be a positive number of ms or "none", got {value!r}') from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f'must be a positive number of ms or "none", got {value!r}')
    return float(value)


def compress_table(section: Any, where: str) -> CompressConfig:
    from dataclasses import fields, replace  # here: the hooks read other tables, without dataclasses

    from compress.config import CompressConfig
    from compress.provider_cache import LIVES
    from compress.vocab.tools import PROTECTED_TOOLS

    config = CompressConfig()
    known = {f.name for f in fields(CompressConfig)} - {"redact_extra", "redact_allow"} | {"stages"}
    changes: dict[str, Any] = {}
    for key, value in _table(section, f"{where}: compress").items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key compress.{key}")
        if key in _SCALARS:
            changes[key] = _typed(value, _SCALARS[key], f"{where}: compress.{key}")
        elif key == "tiers":
            changes["tiers"] = _thresholds(value, f"{where}: compress.tiers")
        elif key == "model_tiers":
            changes["model_tiers"] = {m: _thresholds(v, f"{where}: compress.model_tiers.{m}")
                                      for m, v in _table(value, f"{where}: compress.model_tiers").items()}
        elif key == "cache_ttl":
            if value != "auto" and value not in LIVES:
                raise ConfigError(f"{where}: compress.cache_ttl must be auto, {' or '.join(LIVES)}, got {value!r}")
            changes["cache_ttl"] = value
        elif key == "disabled_stages":
            changes["disabled_stages"] = frozenset(_strings(value, f"{where}: compress.disabled_stages"))
        elif key == "protected_tools":
            extra = _strings(value, f"{where}: compress.protected_tools")
            changes["protected_tools"] = PROTECTED_TOOLS | {t.lower() for t in extra}
        elif key == "stages":
            changes["stage_options"] = _stage_options(value, where)
        else:
            raise ConfigError(f"{where}: compress.{key} cannot be set in the config file")
    return replace(config, **changes)


def _stage_options(value: Any, where: str) -> dict[str, dict[str, Any]]:
    """`[compress.stages.*]` checked against each stage's options dataclass (`Stage.options`)."""
    from compress.runner.pipeline import DEFAULT_STAGES  # only a config that sets stage options pays for the stages
    from compress.stagekit.stage_options import OptionError, checked_options

    try:
        return checked_options(value, DEFAULT_STAGES, "compress.stages")
    except OptionError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _typed(value: Any, kind: type, where: str) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(f"{where} must be {'a number' if kind is float else 'an integer'}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):  # TOML allows inf and nan; no setting means them
        raise ConfigError(f"{where} must be a finite number, got {value!r}")
    return value


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return value


def _thresholds(value: Any, where: str) -> TierThresholds:
    from compress.tiers import TierThresholds

    table = _table(value, where)
    unknown = set(table) - {"medium", "high"}
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]}")
    try:
        return TierThresholds(**{k: _typed(v, int, f"{where}.{k}") for k, v in table.items()})
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def map_table(section: Any, where: str) -> RepoMapConfig:
    """The `[map]` table as a RepoMapConfig: `enabled` (a bool), `budget` (tokens, 0 or more)."""
    from repomap.config import RepoMapConfig

    where = f"{where}: map"
    table = _table(section, where)
    if set(table) - {"enabled", "budget"}:
        raise ConfigError(f"{where}: unknown key map.{sorted(set(table) - {'enabled', 'budget'})[0]}")
    enabled = table.get("enabled", RepoMapConfig.enabled)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}.enabled must be true or false, got {enabled!r}")
    budget = _typed(table.get("budget", RepoMapConfig.budget), int, f"{where}.budget")
    if budget < 0:
        raise ConfigError(f"{where}.budget must be 0 or more, got {budget!r}")
    return RepoMapConfig(enabled, budget)
