"""The faces' settings: one `Settings` per process, built at the edge from the environment,
`<project home>/config.toml` and the user's `<global home>/config.toml`. From it the faces hand
each engine its own typed config (`CompressConfig`, `MemoryConfig`, `CheckpointConfig`) and the
proxy its `ProxyConfig`; engines never read files or the environment.

docs/configuration.md shows every table and key (`tests/test_settings.py` loads its
main example).
A missing file means defaults; an unknown key or a wrong type is a `ConfigError` naming the key.
Each table is checked when first used, so a command fails only on the tables it reads (a bad
`[proxy]` table must not silence the hooks).

A project's config.toml may come from a repository someone else wrote: it tunes how that project
is compressed and searched, never what is shared with other projects. The retention of the
user's CCR store (`[ccr]`) is read from the user's config file only; a project's `[ccr]` table is
ignored with a one-line warning in the log.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path

from ctxmill import paths
from ctxmill.errors import ConfigError

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (a memory search reads settings)
if TYPE_CHECKING:
    from typing import Any

    from ccr.base import OriginalsStore
    from ccr.store import Retention
    from compress.config import CompressConfig
    from compress.pipeline import Chain
    from compress.tiers import TierThresholds
    from memory.checkpoint import CheckpointConfig
    from memory.config import MemoryConfig
    from ground.redis_client import StoreAddress
    from memory.history.config import HistoryConfig
    from repomap.api import RepoMapConfig

CONFIG_FILE = "config.toml"
ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com"
DEFAULT_PORT = 8787
DEFAULT_MAX_BODY = 64 * 2**20
DEFAULT_LATENCY_BUDGET_MS = 25.0
DEFAULT_MAX_INFLIGHT = 256 * 2**20
DEFAULT_MAX_CONNECTIONS = 256
UPSTREAM_KEYS = ("upstream_anthropic", "upstream_openai")
"""`[proxy]` keys naming where the proxy forwards (ProxyConfig fields of the same names)."""

_SCALARS = {"epoch_savings_threshold": int, "window_epoch_savings": int, "window_start_min_tokens": int,
            "epoch_horizon": float, "cache_window_blocks": int, "protect_tail_tokens": int,
            "protect_tail_turns": int, "protect_tail_blocks": int, "min_saving_fraction": float,
            "min_saving_chars": int}


@dataclass(frozen=True)
class Settings:
    """What the faces pass to the engines, read once at the edge (`Settings.load`)."""

    home: Path
    """The project home (`ctxmill.paths.project_home`): config.toml, memory, sessions, CCR."""
    global_home: Path
    """Cross-project memory and caches (`ctxmill.paths.global_home`)."""
    tables: dict[str, Any] = field(default_factory=dict, repr=False)
    """The project's config.toml as parsed; each table is checked by the property that reads it."""
    user_tables: dict[str, Any] = field(default_factory=dict, repr=False)
    """The user's config.toml (in the global home) as parsed: the settings no project may change."""
    store_url: str | None = None
    """The shared store's URL from `--store` or CTXMILL_STORE (see `store`)."""

    @classmethod
    def load(cls, home: Path | None = None, store: str | None = None) -> Settings:
        """The settings of the project at `home` (default: `ctxmill.paths.project_home()`);
        `store`: a face's `--store URL`. ConfigError when its config.toml or the user's is unreadable."""
        home = home or paths.project_home()
        global_home = paths.global_home()
        return cls(home, global_home, _read(home / CONFIG_FILE), _read(global_home / CONFIG_FILE),
                   store_url=store or os.environ.get("CTXMILL_STORE") or None)

    @property
    def source(self) -> str:
        return str(self.home / CONFIG_FILE)

    @property
    def ccr_dir(self) -> Path:
        """The CCR store originals are written to: the user's, shared by every face and project."""
        return paths.user_ccr_dir(self.global_home)

    @property
    def ccr_read_dirs(self) -> tuple[Path, ...]:
        """Where a marker's original is looked up, in order: the user's store, then the project's own."""
        return self.ccr_dir, paths.ccr_dir(self.home)

    @cached_property
    def ccr(self) -> Retention:
        """The user's `[ccr]` table: how long and how much the user's CCR store keeps (a
        project's `[ccr]` is ignored, with a warning)."""
        if "ccr" in self.tables:
            _ignored(self, "[ccr]", "the shared store's retention")
        return _ccr_table(self.user_tables.get("ccr", {}), str(self.global_home / CONFIG_FILE))

    def open_ccr(self) -> OriginalsStore:
        """The CCR store originals are written to (`ccr_dir`, or the shared `store`), with the
        configured retention (CCRError when it cannot open)."""
        from ccr.stores import open_store

        return open_store(self.ccr_dir, self.ccr, self.store)

    @cached_property
    def store(self) -> StoreAddress | None:
        """The shared store (Redis / Valkey) for session state and CCR originals, or None: the
        embedded files and SQLite (`ctxmill.shared_store.store_address` says where it is read)."""
        from ctxmill.shared_store import store_address

        user_config = self.global_home / CONFIG_FILE
        return store_address(self.store_url, self.tables, self.source, user_config, self.user_tables)

    @cached_property
    def tiktoken_cache(self) -> Path | None:
        """Where tiktoken keeps its vocabulary files, for compress.tokens (see `tiktoken_cache()`)."""
        return tiktoken_cache()

    @cached_property
    def redaction(self) -> dict[str, tuple[str, ...]]:
        """`[security]`: `redact_extra` from the project's table and the user's (a project may
        redact more), `redact_allow` from the user's alone (a cloned project must not let
        secrets into the shared stores); as the engines' configs name them."""
        project = _security_table(self.tables.get("security", {}), self.source)
        user = _security_table(self.user_tables.get("security", {}), str(self.global_home / CONFIG_FILE))
        if project["redact_allow"]:
            _ignored(self, "[security] redact_allow", "what is redacted before anything is stored")
        return {"redact_extra": tuple(dict.fromkeys(project["redact_extra"] + user["redact_extra"])),
                "redact_allow": user["redact_allow"]}

    @cached_property
    def compress(self) -> CompressConfig:
        """The `[compress]` and `[security]` tables."""
        return replace(_compress_table(self.tables.get("compress", {}), self.source), **self.redaction)

    @cached_property
    def memory(self) -> MemoryConfig:
        """The project's and the global memory, the `[memory]` and `[security]` tables."""
        from memory.config import MemoryConfig

        return MemoryConfig(project_home=self.home, global_home=self.global_home, cache_dir=self.global_home / "cache",
                            **_memory_table(self.tables.get("memory", {}), self.source), **self.redaction)

    @cached_property
    def repomap(self) -> RepoMapConfig:
        """The `[map]` table: `enabled` (a map with each prompt) and `budget` (its tokens)."""
        from repomap.api import RepoMapConfig

        where = f"{self.source}: map"
        table = _table(self.tables.get("map", {}), where)
        if set(table) - {"enabled", "budget"}:
            raise ConfigError(f"{where}: unknown key map.{sorted(set(table) - {'enabled', 'budget'})[0]}")
        enabled = table.get("enabled", RepoMapConfig.enabled)
        if not isinstance(enabled, bool):
            raise ConfigError(f"{where}.enabled must be true or false, got {enabled!r}")
        budget = _typed(table.get("budget", RepoMapConfig.budget), int, f"{where}.budget")
        if budget < 0:
            raise ConfigError(f"{where}.budget must be 0 or more, got {budget!r}")
        return RepoMapConfig(enabled, budget)

    @cached_property
    def history(self) -> HistoryConfig:
        """The `[history]` and `[security]` tables (`ctxmill.history.history_config`)."""
        from ctxmill.history import history_config

        return history_config(self)

    @property
    def checkpoint(self) -> CheckpointConfig:
        from memory.checkpoint import CheckpointConfig

        return CheckpointConfig(memory=self.memory, ccr_dir=self.ccr_dir, ccr_retention=self.ccr, ccr_store=self.store)

    @cached_property
    def proxy_overrides(self) -> dict[str, Any]:
        """The `[proxy]` table as ProxyConfig field overrides (only the keys it sets)."""
        return _proxy_table(self.tables.get("proxy", {}), self.source)


def _ignored(settings: Settings, what: str, why: str) -> None:
    """Log that a project's `what` is ignored: `why` is the user's setting, in their own file."""
    import logging

    logging.getLogger("ctxmill.settings").warning("%s: %s ignored: %s is the user's setting, in %s",
                                                  settings.source, what, why, settings.global_home / CONFIG_FILE)


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


@dataclass(frozen=True)
class ProxyConfig:
    """Everything the proxy runs with, built by `ctxmill proxy` from its flags and `Settings`."""

    upstream_anthropic: str = ANTHROPIC_API
    upstream_openai: str = OPENAI_API
    """Origins (optionally with a path prefix) the request path is appended to."""
    home: Path | None = None
    """ctxmill home: sessions under sessions_dir(home). None with persist=False keeps everything
    in memory (tests, benchmarks)."""
    ccr_dir: Path | None = None
    """Where originals are stored (None: the user's store, `paths.user_ccr_dir()`, which every face
    reads, so the proxy's markers expand from any project)."""
    persist: bool = True
    compress: CompressConfig = field(default_factory=lambda: _compress_config())
    ccr: Retention | None = None
    """The CCR store's retention (None: the store's defaults)."""
    store: StoreAddress | None = None
    """A shared Redis store for session state and originals, so replicas render the same bytes
    (None: files under `home` and the SQLite CCR store)."""
    chain: Chain | None = None
    """The stages to run (None: compress.pipeline.DEFAULT_STAGES). Sent to each worker process
    when it starts, so every stage function must be a module-level (picklable) function."""
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_sessions: int = 256
    """Sessions kept in memory (least recently used beyond this are dropped; on disk they stay)."""
    new_sessions_per_hour: int = 100
    """New session folders created in any hour; beyond it new sessions stay in memory only."""
    max_stats: int = 4096
    workers: int = field(default_factory=default_workers)
    """Worker processes that run the pipeline (a session always goes to the same one)."""
    latency_budget_ms: float | None = DEFAULT_LATENCY_BUDGET_MS
    """Longest wait for a request's compression; past it the original bytes are sent and the run
    finishes in the background (its state serves the session's next request). None: always wait."""
    connect_timeout: float = 10.0
    read_timeout: float = 600.0
    """Longest silence from the upstream while a response streams (LLM turns can be slow)."""
    client_timeout: float = 20.0
    """Longest a client may stall while sending its request: its headers must be complete this
    long after it connected (or after its previous response), its body may pause this long
    between chunks, and a body waits this long for room among the in-flight bytes."""
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Client connections open at once; beyond it the one waiting longest without a request is
    closed (see ctxmill.proxy.connections)."""
    max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT
    """Request bodies held at once, in total (see ctxmill.proxy.inflight); at least max_body_bytes."""
    ledger_file: Path | None = None
    """The savings ledger each request is added to (None: the user's, `paths.ledger_file()`);
    with persist=False no ledger is written."""

    def __post_init__(self) -> None:
        if self.max_inflight_bytes < self.max_body_bytes:
            raise ValueError(f"the in-flight limit ({self.max_inflight_bytes:,} bytes) must be at least the largest "
                             f"body accepted ({self.max_body_bytes:,} bytes)")


def tiktoken_cache() -> Path | None:
    """The folder tiktoken caches its vocabulary files in, found the way tiktoken finds it
    (None: an empty TIKTOKEN_CACHE_DIR, which tells tiktoken never to cache)."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if folder is None:
        import tempfile

        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(folder) if folder else None


def _compress_config() -> CompressConfig:
    from compress.config import CompressConfig

    return CompressConfig()


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    import tomllib  # only a project with a config file pays for the parser

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _security_table(section: Any, where: str) -> dict[str, tuple[str, ...]]:
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


def _memory_table(section: Any, where: str) -> dict[str, float | int]:
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


def _ccr_table(section: Any, where: str) -> Retention:
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


def _proxy_table(section: Any, where: str) -> dict[str, Any]:
    """latency_budget_ms "none" becomes None (always wait)."""
    table = _table(section, f"{where}: proxy")
    unknown = set(table) - {"latency_budget_ms", "workers", "max_inflight_mb", "max_connections", "client_timeout",
                            *UPSTREAM_KEYS}
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


def _compress_table(section: dict[str, Any], where: str) -> CompressConfig:
    from compress.config import CompressConfig
    from compress.vocab.tools import PROTECTED_TOOLS

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
    if kind is float and not math.isfinite(value):  # TOML allows inf and nan; no setting means them
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
