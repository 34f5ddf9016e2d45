"""The shared store's address, read at the edge: one setting every face reads the same way.

Precedence: a face's `--store URL`, else CTXMILL_STORE (both arrive as `Settings.store_url`),
else `[store] url` / `prefix` in the user's config.toml (`<global home>/config.toml`). A project's
config.toml may not name one (a ConfigError): a cloned repository must not redirect a user's
sessions and originals to a server of its choosing. `prefix` in the URL's query wins over the
table's.
"""

from __future__ import annotations

from pathlib import Path

from ctxmill.errors import ConfigError

TYPE_CHECKING = False  # as in ctxmill.settings: a hook that names no store imports neither typing nor the parser
if TYPE_CHECKING:
    from typing import Any

    from ground.redis_client import StoreAddress

KEYS = {"url", "prefix"}


def store_address(flag_or_env: str | None, project_tables: dict[str, Any], project_source: str,
                  user_config: Path, user_tables: dict[str, Any]) -> StoreAddress | None:
    """The configured store, or None (the embedded default). `user_tables`: the user's
    config.toml (`user_config`) as parsed. ConfigError names the bad key."""
    from ground.redis_client import StoreAddress, StoreAddressError

    if "store" in project_tables:
        raise ConfigError(f"{project_source}: [store] belongs in the user's config ({user_config}), not a project's")
    where = f"{user_config}: store"
    table = user_tables.get("store", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    if set(table) - KEYS:
        raise ConfigError(f"{where}: unknown key store.{sorted(set(table) - KEYS)[0]}")
    for key, value in table.items():
        if not isinstance(value, str):
            raise ConfigError(f"{where}.{key} must be a string, got {value!r}")
    url = flag_or_env or table.get("url")
    if url is None:
        return None
    try:
        address = StoreAddress.parse(url)
        if "prefix" in table and "prefix=" not in url:
            address = StoreAddress(address.url, StoreAddress.parse(f"redis://?prefix={table['prefix']}").prefix)
    except StoreAddressError as exc:
        raise ConfigError(f"store: {exc}") from None
    return address


_clients: dict[Any, Any] = {}


def client(address: StoreAddress) -> Any:
    """One `redis.Redis` per address in this process (ImportError without the `gateway` extra)."""
    if address not in _clients:
        from ground.redis_client import connect

        _clients[address] = connect(address)
    return _clients[address]


def session_place(address: StoreAddress | None, directory: Path, name: str):
    """Where the session `name` keeps its state: `directory`, or the shared store at `address`."""
    from compress.session_store import RedisState, StateFiles

    if address is None:
        return StateFiles(directory)
    return RedisState(client(address), address.prefix, name)


def add_flag(parser) -> None:
    """`--store URL` on a face's command line (proxy, expand, mcp, hook)."""
    parser.add_argument("--store", metavar="URL",
                        help="shared Redis/Valkey store for sessions and originals, e.g. redis://host:6379/0"
                             "?prefix=team: (default: CTXMILL_STORE, else [store] url in the user's config.toml)")
