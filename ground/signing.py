"""Authenticated lines: what ctxmill keeps in a store other people can write (a shared Redis).

A signed line is `<32 hex of the MAC> <line>`, the MAC being HMAC-SHA256 over the line's
`context` (the full name of the key it is stored under, so a line moved to another session, team
or prefix fails) and the line, with a key that comes from the user's or team's own configuration,
never from the store, truncated to 128 bits. Must hold: `open_line` gives back the line `sign_line`
signed under the same key and context, and None for anything else (another key, another context,
one changed byte, garbage), in constant time for the comparison.
"""

from __future__ import annotations

import hashlib
import hmac

MAC_HEX = 32


def mac(key: bytes, context: bytes, data: bytes) -> bytes:
    """The 32 hex characters of the MAC of `data` stored under `context`."""
    return hmac.new(key, context + b"\x00" + data, hashlib.sha256).hexdigest()[:MAC_HEX].encode()


def sign_line(key: bytes, context: bytes, line: bytes) -> bytes:
    return mac(key, context, line) + b" " + line


def open_line(key: bytes, context: bytes, signed: bytes) -> bytes | None:
    """The line `signed` carries, or None when its MAC does not hold."""
    if len(signed) <= MAC_HEX or signed[MAC_HEX:MAC_HEX + 1] != b" ":
        return None
    line = signed[MAC_HEX + 1:]
    return line if hmac.compare_digest(signed[:MAC_HEX], mac(key, context, line)) else None
