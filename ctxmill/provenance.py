"""Config provenance: what a project's config.toml may set. The one place that decides it.

A project's `.ctxmill/config.toml` may come from a repository someone else wrote. It may tune how
that project is compressed, searched and shown (`PROJECT_MAY_SET`, an explicit allow-list); it
may never redirect data, loosen redaction or change what the user's shared stores keep. Where
requests go (`[proxy]` upstreams), the shared store (`[store]`), retention (`[ccr]`), budgets of
shared stores and of the proxy (`[history] max_mb`, `[proxy]` limits), what redaction lets
through (`[security] redact_allow`), and every key not listed, come only from the user's own
config.toml (`<global home>/config.toml`) or from flags.

What must hold:
- `Layers.project(table)` holds only allow-listed keys of the project's table; every other key
  of a table ctxmill reads (and every table it does not read) is dropped, and all of them are
  named in one warning line per file, said once in a process (the log, and the terminal when
  stderr is one); a key no table knows is a ConfigError when its table is first read (a typo
  stays an error);
- `Layers.combine(table, user, project)` is the user's table with the project's keys on top:
  an `ANY` key's value replaces the user's; the others are never looser than the user's (or the
  default, when the user sets nothing): `ADD` lists only grow (protected tools, redact_extra),
  `AT_MOST` numbers only shrink (prompt budgets), `OFF_ONLY` switches only turn off (keeping
  history). A project value beyond the user's is held to it, with one warning.
- when the project's config file is the user's own (the project home is the global home),
  nothing is refused: every table is the user's.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # as in ctxmill.settings: a memory search imports neither typing nor logging
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

ANY, ADD, AT_MOST, OFF_ONLY = "any", "add", "at most", "off only"


def _memory_default(key: str) -> Callable[[], Any]:
    def default() -> Any:
        from memory.config import MemoryConfig

        return getattr(MemoryConfig, key)

    return default


def _map_default(key: str) -> Callable[[], Any]:
    def default() -> Any:
        from repomap.config import RepoMapConfig

        return getattr(RepoMapConfig, key)

    return default


_COMPRESS_ANY = (
    "epoch_savings_threshold",
    "window_epoch_savings",
    "window_start_min_tokens",
    "epoch_horizon",
    "trials_after_answer_from",
    "cache_window_blocks",
    "protect_tail_tokens",
    "protect_tail_turns",
    "protect_tail_blocks",
    "min_saving_fraction",
    "min_saving_chars",
    "tiers",
    "model_tiers",
    "cache_ttl",
    "disabled_stages",
    "stages",
)
PROJECT_MAY_SET: dict[str, dict[str, tuple[str, Callable[[], Any] | None]]] = {
    "compress": {**{key: (ANY, None) for key in _COMPRESS_ANY}, "protected_tools": (ADD, None)},
    "memory": {"recency": (ANY, None), "inject_chars": (AT_MOST, _memory_default("inject_chars"))},
    "map": {"enabled": (ANY, None), "budget": (AT_MOST, _map_default("budget"))},
    "security": {"redact_extra": (ADD, None)},
    "history": {"enabled": (OFF_ONLY, None)},
}
"""table -> key -> (rule, the default when the rule needs one): all a project may set."""
USER_ONLY: dict[str, tuple[str, ...]] = {
    "proxy": (
        "upstream_anthropic",
        "upstream_openai",
        "latency_budget_ms",
        "workers",
        "max_inflight_mb",
        "max_connections",
        "client_timeout",
    ),
    "store": ("url", "prefix"),
    "ccr": ("ttl_hours", "max_mb"),
    "security": ("redact_allow",),
    "history": ("max_mb", "regex_seconds"),
}
"""The keys only the user's own config.toml sets (the rest of what ctxmill reads)."""
_warned: set[tuple[str, str]] = set()


def warn_once(source: str, key: str, why: str) -> None:
    """One line saying the project's `key` (in `source`) was not taken and why: logged, and on
    the terminal when stderr is one; said once per process for each file and key."""
    if (source, key) in _warned:
        return
    _warned.add((source, key))
    from ground.lazy_log import warning

    line = f"{source}: {key} ignored: {why}"
    warning("ctxmill.settings", "%s", line)
    if sys.stderr is not None and sys.stderr.isatty():
        print(f"ctxmill: {line}", file=sys.stderr)


class Layers:
    """A project's config.toml and the user's, as parsed (`read_config`), kept apart; what the
    project may not set is sorted out (and warned about) once, when it is built. A plain class,
    not a dataclass: it holds state, compares by identity, and every hook that reads the
    settings builds one (a dataclass costs ~0.4 ms to define)."""

    def __init__(self, project_tables: dict[str, Any], user_tables: dict[str, Any], source: str,
                 user_source: str, same_file: bool = False) -> None:
        self.project_tables = project_tables
        self.user_tables = user_tables
        self.source = source
        """The project's config file (for messages)."""
        self.user_source = user_source
        self.same_file = same_file
        """The project's config file is the user's own: nothing is refused."""
        self._kept: dict[str, dict[str, Any]] = {}
        self._unknown: dict[str, list[str]] = {}
        if self.same_file:
            self._kept = {
                name: table
                for name, table in self.project_tables.items()
                if isinstance(table, dict)
            }
            return
        refused = []
        for name, table in self.project_tables.items():
            allowed = PROJECT_MAY_SET.get(name, {})
            if not isinstance(table, dict):
                if name in PROJECT_MAY_SET:
                    self._kept[name] = table  # its parser says it must be a table
                else:
                    refused.append(f"[{name}]")
                continue
            kept = self._kept.setdefault(name, {}) if name in PROJECT_MAY_SET else {}
            for key, value in table.items():
                if key in allowed:
                    kept[key] = value
                elif key in USER_ONLY.get(name, ()) or name not in PROJECT_MAY_SET:
                    refused.append(f"[{name}] {key}")
                else:
                    self._unknown.setdefault(name, []).append(key)
        if refused:
            warn_once(
                self.source,
                ", ".join(refused),
                "a project's config.toml may not say where requests go, name a store, set what "
                "the shared stores keep or the proxy's limits, or let text through redaction: "
                f"only your own config ({self.user_source}) or a flag may (docs/security.md lists "
                "what a project may set)",
            )

    def project(self, table: str) -> Any:
        """The project's `table` as far as it may set it; ConfigError naming a key ctxmill does
        not know."""
        if self._unknown.get(table):
            from ctxmill.errors import ConfigError

            raise ConfigError(
                f"{self.source}: unknown key {table}.{sorted(self._unknown[table])[0]}"
            )
        return self._kept.get(table, {})

    def user(self, table: str) -> Any:
        return self.user_tables.get(table, {})

    def combine(self, table: str, user: dict[str, Any], project: dict[str, Any]) -> dict[str, Any]:
        """The user's `table` with the project's keys on top, by each key's rule (both tables
        already checked by the table's parser, so each value has its type)."""
        if self.same_file:
            return {**user, **project}
        out = dict(user)
        for key, value in project.items():
            rule, default = PROJECT_MAY_SET[table][key]
            mine = user.get(key, default() if default else None)
            if rule == ADD:
                out[key] = list(dict.fromkeys([*(mine or []), *value]))
            elif rule == AT_MOST and value > mine:
                self._clipped(table, key, value, f"may only lower it, to at most {mine!r}")
                out[key] = mine
            elif rule == OFF_ONLY and value and mine is False:
                self._clipped(table, key, value, "may only turn it off")
            else:
                out[key] = value
        return out

    def _clipped(self, table: str, key: str, value: Any, how: str) -> None:
        warn_once(
            self.source,
            f"[{table}] {key} = {value!r}",
            f"a project's config.toml {how} (your own config, {self.user_source}, sets the limit)",
        )
