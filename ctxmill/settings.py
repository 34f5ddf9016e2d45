"""The faces' settings: one `Settings` per process, built at the edge from the environment,
`<project home>/config.toml` and the user's `<global home>/config.toml`. From it the faces hand
each engine its own typed config (`CompressConfig`, `MemoryConfig`, `CheckpointConfig`) and the
proxy the `[proxy]` overrides of its `ProxyConfig` (`ctxmill.proxy_config`); engines never
read files or the environment.

docs/configuration.md shows every table and key (`tests/test_settings.py` loads its
main example).
A missing file means defaults; an unknown key or a wrong type is a `ConfigError` naming the key.
Each table is checked when first used, so a command fails only on the tables it reads (a bad
`[proxy]` table must not silence the hooks).

Every table is the user's table with the project's on top, as far as `ctxmill.provenance` lets a
project set it (a project's config.toml may come from a repository someone else wrote: it tunes
how that project is compressed, searched and shown, never where data goes, what redaction lets
through or what the shared stores keep). Each table's parser checks each file on its own, so an
error names the file that holds it.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

from ctxmill import paths
from ctxmill.config_tables import (
    CONFIG_FILE,
    ccr_table,
    compress_table,
    map_table,
    memory_table,
    proxy_table,
    read_config,
    security_table,
)
from ctxmill.provenance import Layers
from ground.records import Record, field

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (a memory search reads settings)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ccr.base import OriginalsStore
    from ccr.store import Retention
    from compress.config import CompressConfig
    from ground.redis_client import StoreAddress
    from memory.checkpoint import CheckpointConfig
    from memory.config import MemoryConfig
    from memory.history.config import HistoryConfig
    from repomap.config import RepoMapConfig

class Settings(Record, slots=False):  # its cached properties need the instance's __dict__
    """What the faces pass to the engines, read once at the edge (`Settings.load`)."""

    home: Path
    """The project home (`ctxmill.paths.project_home`): config.toml, memory, sessions, CCR."""
    global_home: Path
    """Cross-project memory and caches (`ctxmill.paths.global_home`)."""
    tables: dict[str, Any] = field(default_factory=dict, repr=False)
    """The project's config.toml as parsed, as it is: read only through `layers`."""
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
        settings = cls(home, global_home, read_config(home), read_config(global_home),
                       store_url=store or os.environ.get("CTXMILL_STORE") or None)
        settings.layers  # noqa: B018 - what a project may not set is said now, whatever is read
        return settings

    @property
    def source(self) -> str:
        return str(self.home / CONFIG_FILE)

    @property
    def user_source(self) -> str:
        return str(self.global_home / CONFIG_FILE)

    @cached_property
    def layers(self) -> Layers:
        """The two files kept apart, the project's held to what it may set (ctxmill.provenance)."""
        same = os.path.realpath(self.home) == os.path.realpath(self.global_home)
        return Layers(self.tables, self.user_tables, self.source, self.user_source, same)

    def table(self, name: str, parse: Callable[[Any, str], Any]) -> Any:
        """`parse(table, where)` of the table `name`: the user's with what the project may set on
        top (`Layers.combine`); each file's table is parsed on its own first, so an error names
        the file it is in."""
        project, user = self.layers.project(name), self.layers.user(name)
        parse(project, self.source)
        parse(user, self.user_source)
        where = self.source if project else self.user_source
        return parse(self.layers.combine(name, user, project), where)

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
        """The user's `[ccr]` table: how long and how much the user's CCR store keeps."""
        return self.table("ccr", ccr_table)

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

        # a project's [store] never gets here (ctxmill.provenance refuses it)
        return store_address(self.store_url, {}, self.source, self.global_home / CONFIG_FILE,
                             self.user_tables)

    @cached_property
    def tiktoken_cache(self) -> Path | None:
        """Where tiktoken keeps its vocabulary files, for compress.token_counters (see `tiktoken_cache()`)."""
        return tiktoken_cache()

    @cached_property
    def redaction(self) -> dict[str, tuple[str, ...]]:
        """`[security]`: `redact_extra` from the user's table and the project's (a project may
        redact more), `redact_allow` from the user's alone (a cloned project must not let
        secrets into the shared stores); as the engines' configs name them."""
        return self.table("security", security_table)

    @cached_property
    def compress(self) -> CompressConfig:
        """The `[compress]` and `[security]` tables."""
        from dataclasses import replace

        return replace(self.table("compress", compress_table), **self.redaction)

    @cached_property
    def memory(self) -> MemoryConfig:
        """The project's and the global memory, the `[memory]` and `[security]` tables."""
        from memory.config import MemoryConfig

        return MemoryConfig(project_home=self.home, global_home=self.global_home, cache_dir=self.global_home / "cache",
                            **self.table("memory", memory_table), redact_extra=self.redaction["redact_extra"],
                            redact_allow=self.redaction["redact_allow"])

    @cached_property
    def repomap(self) -> RepoMapConfig:
        """The `[map]` table: `enabled` (a map with each prompt) and `budget` (its tokens)."""
        return self.table("map", map_table)

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
        """The user's `[proxy]` table as ProxyConfig field overrides (only the keys it sets)."""
        return self.table("proxy", proxy_table)


def tiktoken_cache() -> Path | None:
    """The folder tiktoken caches its vocabulary files in, found the way tiktoken finds it
    (None: an empty TIKTOKEN_CACHE_DIR, which tells tiktoken never to cache)."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if folder is None:
        import tempfile

        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(folder) if folder else None
