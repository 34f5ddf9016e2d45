"""CCR keys: one format everywhere, safe to put in paths, URLs, logs and markers.

A key is the xxh3_128 hash of the text's UTF-8 bytes as 32 lowercase hex characters.
Lone surrogates (e.g. from surrogateescape-decoded tool output) are hashed via
"surrogatepass", so every Python str has a key. xxh3 is fast, not cryptographic: keys
address content, they do not authenticate it.
"""

from __future__ import annotations

import re

import xxhash

KEY_LENGTH = 32
_KEY = re.compile(r"[0-9a-f]{%d}" % KEY_LENGTH)


def make_key(text: str) -> str:
    """The store key of `text`; identical text always gives the identical key."""
    return xxhash.xxh3_128_hexdigest(text.encode("utf-8", "surrogatepass"))


def is_valid_key(value: object) -> bool:
    """True only for exactly 32 lowercase hex characters (rejects paths, padding, case)."""
    return isinstance(value, str) and _KEY.fullmatch(value) is not None
