"""The `[history]` table of config.toml as a `memory.history.config.HistoryConfig`.

`[history]` keys: `enabled` (default true: sessions are kept), `max_mb` (the store's size budget,
default 256), `regex_seconds` (the time a regular-expression search may take, default 2). The
store is one file per user, `<global home>/history/history.sqlite3`, so `max_mb` and
`regex_seconds` are read from the user's own config.toml only; a project may turn `enabled`
off, never on (`ctxmill.provenance`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxmill.errors import ConfigError

if TYPE_CHECKING:
    from memory.history.config import HistoryConfig

HISTORY_FILE = Path("history") / "history.sqlite3"


def history_config(settings: Any) -> HistoryConfig:
    """`settings`: the `ctxmill.settings.Settings` whose tables and homes to read."""
    from memory.history.config import HistoryConfig

    return HistoryConfig(path=settings.global_home / HISTORY_FILE, cache_dir=settings.global_home / "cache",
                         redact_extra=settings.redaction["redact_extra"],
                         redact_allow=settings.redaction["redact_allow"],
                         **settings.table("history", _table_values))


def _table_values(table: Any, where: str) -> dict[str, Any]:
    """A `[history]` table (of the config file `where`) as HistoryConfig field values
    (ConfigError naming a bad key)."""
    where = f"{where}: history"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = set(table) - {"enabled", "max_mb", "regex_seconds"}
    if unknown:
        raise ConfigError(f"{where}: unknown key history.{sorted(unknown)[0]}")
    values: dict[str, Any] = {}
    if "enabled" in table:
        if not isinstance(table["enabled"], bool):
            raise ConfigError(f"{where}.enabled must be true or false, got {table['enabled']!r}")
        values["enabled"] = table["enabled"]
    for key, field_name, scale in (("max_mb", "max_bytes", 2**20), ("regex_seconds", "regex_seconds", 1)):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
                raise ConfigError(f"{where}.{key} must be a positive number, got {value!r}")
            values[field_name] = int(value * scale) if scale > 1 else float(value)
    return values
