"""The session's keys: the hash of each message prefix, and a memo that spares re-serialising
the messages a long-lived process already hashed for the session's previous request.

Must hold:
- `prefix_hashes` is the one definition: the xxh3-128 chain over each message's compact JSON
  (`ground.jsonbytes.dumps`); equal hashes mean equal messages up to and including it.
- `PrefixHashMemo.hashes` gives exactly `prefix_hashes`. It looks a message up by the hash it
  chains from and a fingerprint of the message's pickle (protocol 5): for a value parsed from
  JSON (what every face hands the pipeline), a pickle determines the value, its types (1, 1.0
  and true apart) and its keys' order, so equal pickles mean equal JSON bytes; a message whose
  pickle differs (or cannot be made) is hashed from its JSON as always. Pickling a parsed
  message is about twice as quick as writing its JSON, and nothing is ever unpickled.
- With `trust_identity` set, a message that is the very object at the same position of the last
  request hashed, chained from the same hash, takes that request's hash without being pickled.
  Only a caller that never changes a message in place once it handed it over may set it (the
  proxy's worker: it parses every body itself, and the pipeline's stages are pure); the memo
  then holds the last request's message objects too, which such a caller keeps anyway.
- Bounded and in memory only: the memo holds the keys of the last request hashed, no more.
"""

from __future__ import annotations

import pickle
from typing import Any

import xxhash

from ground.jsonbytes import dumps


def prefix_hashes(raw_messages: list[Any]) -> list[str]:
    """The session's keys: the hash of each message prefix (equal hashes mean equal messages up
    to and including it)."""
    out = []
    prev = b""
    for msg in raw_messages:
        prev = _chained(prev, msg)
        out.append(prev.hex())
    return out


def _chained(prev: bytes, msg: Any) -> bytes:
    h = xxhash.xxh3_128(prev)
    h.update(dumps(msg))
    return h.digest()


class PrefixHashMemo:
    """`prefix_hashes` that reuses the chain of the last request it hashed."""

    __slots__ = ("_last", "_seen", "trust_identity")

    def __init__(self, trust_identity: bool = False) -> None:
        self._last: dict[bytes, bytes] = {}
        self._seen: list[tuple[Any, bytes, bytes | None, bytes]] = []
        """With `trust_identity`: per position of the last request, (message, the hash it chained
        from, its pickle key or None, its hash)."""
        self.trust_identity = trust_identity

    def hashes(self, raw_messages: list[Any]) -> list[str]:
        last, now = self._last, {}
        seen = self._seen if self.trust_identity else []
        kept: list[tuple[Any, bytes, bytes | None, bytes]] = []
        out = []
        prev = b""
        for i, msg in enumerate(raw_messages):
            before = prev
            key: bytes | None
            if i < len(seen) and seen[i][0] is msg and seen[i][1] == before:
                _, _, key, prev = seen[i]  # the same object chained from the same hash: its hash
            else:
                try:
                    key = before + xxhash.xxh3_128_digest(pickle.dumps(msg, 5))
                except Exception:  # noqa: BLE001 - not picklable (or too deep): hashed from its JSON alone
                    key = None
                found = last.get(key) if key is not None else None
                prev = found if found is not None else _chained(before, msg)
            if key is not None:
                now[key] = prev
            if self.trust_identity:
                kept.append((msg, before, key, prev))
            out.append(prev.hex())
        self._last = now
        self._seen = kept
        return out
