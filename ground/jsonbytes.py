"""JSON bytes for hashing and persisting any parsed request, including lone surrogates, and a
parse that refuses what it would not give back exactly."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_DIGITS = re.compile(rb"\d{19}")
"""Any integer outside the 64-bit ranges (below -2**63 or above 2**64 - 1) has 19 digits or more."""


class InexactNumber(ValueError):
    """The JSON holds an integer beyond 64 bits, which orjson would read as an approximate float."""


def loads(data: bytes) -> Any:
    """`orjson.loads(data)`, or InexactNumber when that would change a number (orjson reads an
    integer beyond 64 bits as a float). orjson.JSONDecodeError for invalid JSON."""
    value = orjson.loads(data)
    if _LONG_DIGITS.search(data) and _has_big_integer(data):
        raise InexactNumber("an integer beyond 64 bits (it would be read as an approximate float)")
    return value


def _has_big_integer(data: bytes) -> bool:
    import simdjson  # imported only for documents with a 19-digit run

    try:
        simdjson.Parser().parse(data)
    except (RuntimeError, ValueError) as exc:
        return str(exc).startswith(("BIGINT_ERROR", "NUMBER_ERROR"))
    return False


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes; falls back to the stdlib (ASCII escapes) where orjson refuses,
    e.g. lone surrogates or nesting deeper than orjson's limit. RecursionError propagates."""
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), default=str).encode()


def parse_document(text: str) -> Any:
    """The JSON value if `text` is entirely one JSON object or array, else None."""
    stripped = text.strip()
    if not stripped or stripped[0] + stripped[-1] not in ("{}", "[]"):
        return None
    try:
        return orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
