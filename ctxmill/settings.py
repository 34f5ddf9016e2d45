"""`<project home>/config.toml` -> the typed engine configuration. Only faces read files or env.

```toml
[compress]
epoch_savings_threshold = 20000
protect_tail_tokens = 4000
protect_tail_turns = 2
protect_tail_blocks = 10
min_saving_fraction = 0.15
min_saving_chars = 200
disabled_stages = ["compress_prose"]
protected_tools = ["my_tool"]          # added to the built-in protected tools

[compress.tiers]                       # absolute token thresholds
medium = 50000
high = 150000

[compress.model_tiers."gpt-4o-mini"]   # per-model overrides, longest prefix wins
medium = 30000
high = 90000

[compress.stages.trim_outputs]         # per-stage knobs, documented in each stage
max_lines = 400

[security]                             # secrets are redacted before CCR or memory stores text
redact_extra = ["INTERNAL-[0-9]{6}"]   # more regexes to redact (a group named `secret`: only it)
redact_allow = ["AKIAIOSFODNN7EXAMPLE"]  # regexes for values to keep (full match)

[proxy]                                # `ctxmill proxy`; its flags override these
latency_budget_ms = 25                 # or "none": always wait for compression
workers = 2                            # pipeline worker processes
```
A missing file means defaults; an unknown key or a wrong type is an error naming the key.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import regex

from compress.config import CompressConfig
from compress.tiers import TierThresholds
from compress.vocab.tools import PROTECTED_TOOLS

CONFIG_FILE = "config.toml"


class ConfigError(ValueError):
    """The config file is unreadable or has an unknown key or a wrong type (one line)."""


_SCALARS = {"epoch_savings_threshold": int, "protect_tail_tokens": int, "protect_tail_turns": int,
            "protect_tail_blocks": int, "min_saving_fraction": float, "min_saving_chars": int}


@dataclass(frozen=True)
class Redaction:
    """The `[security]` table: extra secret patterns and allowed values (regexes)."""

    extra: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()


def _load(home: Path) -> tuple[dict[str, Any], str]:
    path = home / CONFIG_FILE
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")), str(path)
    except FileNotFoundError:
        return {}, str(path)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def load_compress_config(home: Path) -> CompressConfig:
    data, where = _load(home)
    redaction = redaction_from(data.get("security", {}), where)
    config = compress_config_from(data.get("compress", {}), where)
    return replace(config, redact_extra=redaction.extra, redact_allow=redaction.allow)


def load_proxy_settings(home: Path) -> dict[str, Any]:
    data, where = _load(home)
    return proxy_settings_from(data.get("proxy", {}), where)


def proxy_settings_from(section: Any, where: str = "config") -> dict[str, Any]:
    """The `[proxy]` table as ProxyConfig field overrides (only the keys it sets);
    latency_budget_ms "none" becomes None (always wait)."""
    table = _table(section, f"{where}: proxy")
    unknown = set(table) - {"latency_budget_ms", "workers"}
    if unknown:
        raise ConfigError(f"{where}: unknown key proxy.{sorted(unknown)[0]}")
    out: dict[str, Any] = {}
    if "latency_budget_ms" in table:
        try:
            out["latency_budget_ms"] = parse_budget(table["latency_budget_ms"])
        except ValueError as exc:
            raise ConfigError(f"{where}: proxy.latency_budget_ms {exc}") from None
    if "workers" in table:
        out["workers"] = _typed(table["workers"], int, f"{where}: proxy.workers")
        if out["workers"] < 1:
            raise ConfigError(f"{where}: proxy.workers must be at least 1")
    return out


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


def load_redaction(home: Path) -> Redaction:
    data, where = _load(home)
    return redaction_from(data.get("security", {}), where)


def redaction_from(section: Any, where: str = "config") -> Redaction:
    table = _table(section, f"{where}: security")
    unknown = set(table) - {"redact_extra", "redact_allow"}
    if unknown:
        raise ConfigError(f"{where}: unknown key security.{sorted(unknown)[0]}")
    lists = {}
    for key in ("redact_extra", "redact_allow"):
        lists[key] = tuple(_strings(table.get(key, []), f"{where}: security.{key}"))
        for pattern in lists[key]:
            try:
                regex.compile(pattern)
            except regex.error as exc:
                raise ConfigError(f"{where}: security.{key}: bad regex {pattern!r}: {exc}") from None
    return Redaction(lists["redact_extra"], lists["redact_allow"])


def compress_config_for_cli(home: Path | None = None) -> CompressConfig:
    """The project's compress settings for a CLI command; a bad file is a one-line CLI error."""
    from ctxmill.errors import CliError
    from ctxmill.paths import project_home

    try:
        return load_compress_config(home or project_home())
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def compress_config_from(section: dict[str, Any], where: str = "config") -> CompressConfig:
    config = CompressConfig()
    known = {f.name for f in fields(CompressConfig)} - {"redact_extra", "redact_allow"} | {"stages"}
    changes: dict[str, Any] = {}
    for key, value in section.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key compress.{key}")
        if key in _SCALARS:
            changes[key] = _typed(value, _SCALARS[key], f"{where}: compress.{key}")
        elif key == "tiers":
            changes["tiers"] = _thresholds(value, f"{where}: compress.tiers")
        elif key == "model_tiers":
            changes["model_tiers"] = {m: _thresholds(v, f"{where}: compress.model_tiers.{m}")
                                      for m, v in _table(value, f"{where}: compress.model_tiers").items()}
        elif key == "disabled_stages":
            changes["disabled_stages"] = frozenset(_strings(value, f"{where}: compress.disabled_stages"))
        elif key == "protected_tools":
            extra = _strings(value, f"{where}: compress.protected_tools")
            changes["protected_tools"] = PROTECTED_TOOLS | {t.lower() for t in extra}
        elif key == "stages":
            changes["stage_options"] = {name: dict(_table(opts, f"{where}: compress.stages.{name}"))
                                        for name, opts in _table(value, f"{where}: compress.stages").items()}
        else:
            raise ConfigError(f"{where}: compress.{key} cannot be set in the config file")
    return replace(config, **changes)


def _typed(value: Any, kind: type, where: str) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(f"{where} must be {'a number' if kind is float else 'an integer'}, got {value!r}")
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
    table = _table(value, where)
    unknown = set(table) - {"medium", "high"}
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]}")
    try:
        return TierThresholds(**{k: _typed(v, int, f"{where}.{k}") for k, v in table.items()})
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
