"""What the dashboard's memory browser shows: search hits (or every entry), the pinned entries and
the last checkpoint, read through `memory.api` and the project's checkpoint file."""

from __future__ import annotations

from typing import Any

MAX_ENTRIES = 200


def view(settings: Any, query: str = "") -> dict[str, Any]:
    """`{entries, pinned, checkpoint, error}` for `settings` (`ctxmill.settings.Settings`)."""
    from memory import api
    from memory.summary import checkpoint_text

    cfg = settings.memory
    error = ""
    try:
        if query.strip():
            entries = [hit.entry.to_dict() | {"score": round(hit.score, 3)} for hit in api.search(cfg, query, limit=50)]
        else:
            entries = [e.to_dict() for e in api.list_entries(cfg)[:MAX_ENTRIES]]
    except api.BadInput as exc:
        entries, error = [], str(exc)
    checkpoint = checkpoint_text(settings.home) or ""
    return {"query": query, "entries": entries, "pinned": [e.to_dict() for e in api.pinned(cfg)],
            "checkpoint": checkpoint, "error": error}
