"""A shared store's address: `redis://…` / `rediss://…` / `unix://…` (Redis or Valkey), and the client.

Must hold:
- `StoreAddress.parse` accepts only those schemes; a `prefix` query parameter names the key
  namespace (default `ctxmill:`), so teams can share one Redis; every other query parameter is
  the `redis` client's own (`redis.from_url`).
- `shown` is the address without its password: only `shown` goes into logs, stats and errors.
- `key` is the team's MAC key for what ctxmill keeps there (`ground.signing`); it comes from the
  user's configuration or environment (`ctxmill.shared_store`), never from the store, and never
  appears in a repr, log or message.
- `connect` gives a client with short timeouts (a dead Redis costs a request at most
  `timeout` seconds, never a hang) and no retries of its own: the caller fails open.
- `redis` is imported only here and only by `connect`: without the `gateway` extra nothing else
  changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SCHEMES = ("redis", "rediss", "unix")
DEFAULT_PREFIX = "ctxmill:"
TIMEOUT_SECONDS = 2.0


class StoreAddressError(ValueError):
    """The address is not a Redis URL this store can use."""


@dataclass(frozen=True)
class StoreAddress:
    url: str
    """The client's URL (without the `prefix` parameter)."""
    prefix: str = DEFAULT_PREFIX
    key: bytes = field(default=b"", repr=False)
    """The MAC key of the records kept there (b"": none given yet)."""

    def with_key(self, key: bytes) -> StoreAddress:
        return replace(self, key=key)

    @classmethod
    def parse(cls, text: str) -> StoreAddress:
        parts = urlsplit(text.strip())
        if parts.scheme not in SCHEMES:
            raise StoreAddressError(f"store URL must start with {', '.join(s + '://' for s in SCHEMES)}; "
                                    f"got {_without_password(parts)!r}")
        query = parse_qsl(parts.query, keep_blank_values=True)
        prefixes = [v for k, v in query if k == "prefix"]
        rest = urlencode([(k, v) for k, v in query if k != "prefix"])
        prefix = prefixes[-1] if prefixes else DEFAULT_PREFIX
        if any(c.isspace() for c in prefix):
            raise StoreAddressError(f"store key prefix must not contain spaces: {prefix!r}")
        return cls(urlunsplit(parts._replace(query=rest)), prefix)

    @property
    def shown(self) -> str:
        """The address as logs may show it: no password."""
        return _without_password(urlsplit(self.url))


def _without_password(parts) -> str:
    if parts.password is None:
        return urlunsplit(parts)
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def connect(address: StoreAddress, timeout: float = TIMEOUT_SECONDS):
    """A `redis.Redis` client for `address` (connections open lazily, on first use).
    ImportError (with how to install it) when the `redis` package is missing."""
    try:
        import redis
    except ImportError:
        raise ImportError("a Redis store needs the redis package: pip install 'ctxmill[gateway]'") from None
    return redis.Redis.from_url(address.url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                retry_on_timeout=False, health_check_interval=30)
