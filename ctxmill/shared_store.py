"""The shared store's address, read at the edge: one setting every face reads the same way.

Precedence: a face's `--store URL`, else CTXMILL_STORE (both arrive as `Settings.store_url`),
else `[store] url` / `prefix` in the user's config.toml (`<global home>/config.toml`). A project's
config.toml may not name one (a ConfigError): a cloned repository must not redirect a user's
sessions and originals to a server of its choosing. `prefix` in the URL's query wins over the
table's.

The store key (`StoreAddress.key`): what ctxmill keeps in a shared store is signed with it, so
anyone else who can write that Redis (a co-tenant, another team on another prefix) cannot change
what ctxmill sends upstream or returns from an expansion. It comes from CTXMILL_STORE_KEY, else
from the file `[store] key_file` names (owned by the user, readable by nobody else), never from
the store; a store without one is a ConfigError. Every replica of a team uses the same key.
"""

from __future__ import annotations

from pathlib import Path

from ctxmill.errors import ConfigError

TYPE_CHECKING = False  # as in ctxmill.settings: a hook that names no store imports neither typing nor the parser
if TYPE_CHECKING:
    from typing import Any

    from ground.redis_client import StoreAddress

KEYS = {"url", "prefix", "key_file"}
KEY_ENV = "CTXMILL_STORE_KEY"
MIN_KEY_BYTES = 16


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
    return address.with_key(store_key(table.get("key_file"), where))


def store_key(key_file: str | None, where: str) -> bytes:
    """The team's store key: CTXMILL_STORE_KEY, else the content of `key_file` (ConfigError when
    there is none, it is short, or the file is not the user's own and private)."""
    import os

    text = os.environ.get(KEY_ENV, "")
    if not text and key_file:
        path = Path(key_file).expanduser()
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if st.st_uid != os.getuid() or st.st_mode & 0o077:
                    raise ConfigError(f"{where}.key_file {path} must be yours and private (chmod 600)")
                text = fh.read(4096).decode("utf-8", "replace").strip()
        except OSError as exc:
            raise ConfigError(f"{where}.key_file {path}: {exc.strerror or exc}") from None
    if not text:
        raise ConfigError(f"a shared store needs the team's store key, to sign what ctxmill keeps there: set {KEY_ENV} "
                          f"or [store] key_file (the same key on every replica; e.g. `openssl rand -hex 32`)")
    if len(text.encode()) < MIN_KEY_BYTES:
        raise ConfigError(f"the store key must be at least {MIN_KEY_BYTES} characters")
    return text.encode()


_clients: dict[Any, Any] = {}


def client(address: StoreAddress) -> Any:
    """One `redis.Redis` per address in this process (ImportError without the `gateway` extra)."""
    if address not in _clients:
        from ground.redis_client import connect

        _clients[address] = connect(address)
    return _clients[address]


def session_place(address: StoreAddress | None, directory: Path, name: str):
    """Where the session `name` keeps its state: `directory`, or the shared store at `address`."""
    from compress.state.session_store import RedisState, StateFiles

    if address is None:
        return StateFiles(directory)
    return RedisState(client(address), address.prefix, name, key=address.key)


def check(address: StoreAddress) -> str | None:
    """Whether a long-running face (the proxy) can work on the store: raises ConfigError with one
    line when it never could (the `redis` package missing, a password or database Redis refuses,
    not a Redis); returns a warning when Redis does not answer now (requests then pass through
    unchanged until it does); None when it answers."""
    try:
        redis = client(address)
    except ImportError as exc:
        raise ConfigError(f"--store {address.shown}: {exc}") from None
    import redis as redis_package

    try:
        redis.ping()
    except (redis_package.AuthenticationError, redis_package.ResponseError) as exc:
        raise ConfigError(f"--store {address.shown}: Redis refused: {str(exc).splitlines()[0][:200]}") from None
    except (redis_package.ConnectionError, redis_package.TimeoutError, OSError) as exc:
        return (f"store {address.shown} does not answer now ({type(exc).__name__}); requests pass through "
                f"unchanged until it does")
    return None


def add_flag(parser) -> None:
    """`--store URL` on a face's command line (proxy, expand, mcp, hook)."""
    parser.add_argument("--store", metavar="URL",
                        help="shared Redis/Valkey store for sessions and originals, e.g. redis://host:6379/0"
                             "?prefix=team: (default: CTXMILL_STORE, else [store] url in the user's config.toml)")
