"""The CCR store in Redis (or Valkey): the same originals, shared by several machines.

Layout under the configured prefix `P` (every key starts with it, so teams can share a Redis):
- `P ccr:e:<key>`: a hash per entry: `body` (the same UTF-8 bytes SQLite holds; absent for a
  tombstone), `hint`, `created`, `size`, and for tombstones `gone` and `reason`;
- `P ccr:live`: sorted set of live keys scored by last access (drives TTL and LRU eviction);
- `P ccr:gone`: sorted set of tombstones scored by when the body was dropped;
- `P ccr:bytes`: the live payload in bytes.
Who else can write the Redis must not be able to change what an expansion returns: each body and
hint carries its MAC (`bmac`, `hmac`: `ground.signing`, over the entry's full key name, with the
team's store key); a body or hint whose MAC fails is never returned (the entry reads as not
found, logged), and a tombstone's reason is only ever one of the script's own words.
Each commit (a batch of puts, then expiry, eviction and tombstone pruning) is one Lua script,
so it is atomic like SQLite's transaction: all of a request's originals or none. Expiry is the
store's own (never Redis key expiry, which would leave `P ccr:bytes` wrong). A connection or
server error becomes CCRError: the pipeline fails open on it.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import Callable

from ccr.base import DAY, CCRError, Found, OriginalsStore, Retention, Stats, encode
from ccr.keys import is_valid_key
from ground.signing import mac

log = logging.getLogger("ctxmill.ccr")
REASONS = (b"expired", b"evicted")
"""A tombstone's reasons, as the commit script writes them."""
_EVICT_CHUNK = 256

_COMMIT = """
local live, gone, total = KEYS[1], KEYS[2], KEYS[3]
local entry, now, expire_before = ARGV[1], ARGV[2], ARGV[3]
local max_bytes, prune_before = tonumber(ARGV[4]), ARGV[5]
for i = 6, #ARGV, 5 do
  local k = entry .. ARGV[i]
  local was_live = redis.call('HEXISTS', k, 'body') == 1
  local old = tonumber(redis.call('HGET', k, 'size') or '0')
  if not was_live then redis.call('HSET', k, 'created', now) ; old = 0 end
  redis.call('HSET', k, 'body', ARGV[i + 2], 'size', #ARGV[i + 2], 'bmac', ARGV[i + 3])
  if ARGV[i + 1] ~= '' then redis.call('HSET', k, 'hint', ARGV[i + 1], 'hmac', ARGV[i + 4]) end
  redis.call('HDEL', k, 'gone', 'reason')
  redis.call('ZREM', gone, ARGV[i])
  redis.call('ZADD', live, now, ARGV[i])
  redis.call('INCRBY', total, #ARGV[i + 2] - old)
end
local function tombstone(key, reason)
  local k = entry .. key
  redis.call('DECRBY', total, tonumber(redis.call('HGET', k, 'size') or '0'))
  redis.call('HDEL', k, 'body')
  redis.call('HSET', k, 'size', 0, 'gone', now, 'reason', reason)
  redis.call('ZREM', live, key)
  redis.call('ZADD', gone, now, key)
end
for _, key in ipairs(redis.call('ZRANGEBYSCORE', live, '-inf', '(' .. expire_before)) do
  tombstone(key, 'expired')
end
local excess = tonumber(redis.call('GET', total) or '0') - max_bytes
while excess > 0 do
  local victims = redis.call('ZRANGEBYSCORE', live, '-inf', '(' .. now, 'LIMIT', 0, %d)
  if #victims == 0 then break end
  for _, key in ipairs(victims) do
    if excess <= 0 then break end
    excess = excess - tonumber(redis.call('HGET', entry .. key, 'size') or '0')
    tombstone(key, 'evicted')
  end
end
for _, key in ipairs(redis.call('ZRANGEBYSCORE', gone, '-inf', '(' .. prune_before)) do
  redis.call('DEL', entry .. key)
  redis.call('ZREM', gone, key)
end
return 1
""" % _EVICT_CHUNK


class RedisCCRStore(OriginalsStore):
    """CCR originals in Redis through `client` (a `redis.Redis`, see `ground.redis_client`)."""

    def __init__(self, client, prefix: str, *, key: bytes, retention: Retention = Retention(),
                 tombstone_seconds: float = 30 * DAY, clock: Callable[[], float] = time.time,
                 shown: str = "redis") -> None:
        """`shown`: the store's address without secrets, for messages and stats; `key`: the MAC
        key (the team's store key, never read from Redis)."""
        if not key:
            raise CCRError("a shared store's originals need a MAC key (the team's store key)")
        super().__init__(retention, tombstone_seconds, clock)
        self._key = key
        self._redis = client
        self._lock = threading.Lock()
        self._entry = f"{prefix}ccr:e:"
        self._live, self._gone, self._bytes = f"{prefix}ccr:live", f"{prefix}ccr:gone", f"{prefix}ccr:bytes"
        self.path = shown
        self._commit = client.register_script(_COMMIT)

    def _write(self, items: dict[str, tuple[str, str | None]]) -> None:
        now = self._clock()
        args: list = [self._entry, repr(now), repr(now - self.ttl_seconds), self.max_bytes,
                      repr(now - self.tombstone_seconds)]
        for key, (text, hint) in items.items():
            body, context = encode(text), (self._entry + key).encode()
            args += [key, hint or "", body, mac(self._key, context, body),
                     mac(self._key, context, (hint or "").encode())]
        try:
            with self._lock:
                self._commit(keys=[self._live, self._gone, self._bytes], args=args)
        except Exception as exc:
            raise CCRError(f"CCR commit of {len(items)} entries failed at {self.path}: {_why(exc)}") from exc

    def refresh(self, keys) -> float:
        now = self._clock()
        valid = sorted(k for k in set(keys) if is_valid_key(k))
        if valid:
            try:
                with self._lock:
                    self._redis.zadd(self._live, dict.fromkeys(valid, now), xx=True, gt=True)
            except Exception as exc:
                raise CCRError(f"CCR refresh of {len(valid)} keys failed at {self.path}: {_why(exc)}") from exc
        return now

    def _lookup(self, key: str, now: float) -> Found | None:
        try:
            with self._lock:
                pipe = self._redis.pipeline(transaction=False)
                pipe.hmget(self._entry + key, "body", "hint", "created", "reason", "bmac", "hmac")
                pipe.zscore(self._live, key)
                (body, hint, created, reason, body_mac, hint_mac), accessed = pipe.execute()
                body, hint = self._verified(key, body, body_mac), self._verified(key, hint, hint_mac)
                if body is not None and accessed is not None and now - accessed <= self.ttl_seconds:
                    self._redis.zadd(self._live, {key: now}, xx=True, gt=True)
        except Exception as exc:
            raise CCRError(f"CCR read failed at {self.path}: {_why(exc)}") from exc
        if created is None or (body is None and reason not in REASONS):
            return None
        return Found(body, hint.decode() if hint else None, float(created),
                     accessed if accessed is not None else 0.0, reason.decode() if body is None else None)

    def _verified(self, key: str, value: bytes | None, stored_mac: bytes | None) -> bytes | None:
        """`value` when its MAC holds; None (and a log line) when it is forged or changed."""
        if value is None:
            return None
        expected = mac(self._key, (self._entry + key).encode(), value)
        if stored_mac is None or not hmac.compare_digest(stored_mac, expected):
            log.warning("CCR entry %s at %s fails its integrity check: ignored", key, self.path)
            return None
        return value

    def stats(self) -> Stats:
        try:
            with self._lock:
                pipe = self._redis.pipeline(transaction=False)
                pipe.zcard(self._live).zcard(self._gone).get(self._bytes)
                entries, tombstones, live = pipe.execute()
        except Exception as exc:
            raise CCRError(f"CCR stats failed at {self.path}: {_why(exc)}") from exc
        return Stats(self.path, entries, tombstones, int(live or 0), self.max_bytes, self.ttl_seconds)

    def close(self) -> None:
        self._redis.close()


def _why(exc: BaseException) -> str:
    """One line, and never the URL (it may hold a password): the exception's type and message."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
