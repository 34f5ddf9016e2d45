"""Time stamps as seconds since the epoch."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_seconds(text: str) -> float | None:
    """An ISO 8601 date or date-time ("2026-06-14T12:06:25.931Z"), UTC unless it names its zone,
    as seconds since the epoch; None when it is not one."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
