"""JSON bytes for hashing and persisting any parsed request, including lone surrogates."""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes; falls back to the stdlib (ASCII escapes) where orjson refuses,
    e.g. lone surrogates or nesting deeper than orjson's limit. RecursionError propagates."""
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), default=str).encode()
