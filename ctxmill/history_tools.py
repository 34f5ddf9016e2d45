"""history_search and history_get as the MCP server and the CLI run them: filters parsed the same
way for both; bad input or an unusable store raises `HistoryToolError` with a one-line message."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from ctxmill.settings import Settings


class HistoryToolError(Exception):
    """Bad input or an unusable store: the message is one line for the person or the model."""


def _filter(project, session, since, until):
    from memory.history.query import Filter, parse_time

    return Filter(project or None, session or None, parse_time(since), parse_time(until))


def search_tool(settings: Settings, query: str, regex: bool = False, project: str | None = None,
                session: str | None = None, since: str | None = None, until: str | None = None,
                limit: int = 10) -> dict:
    from memory.history.query import BadQuery, search
    from memory.history.store import HistoryError, HistoryStore

    try:
        with HistoryStore.open(settings.history) as store:
            found = search(store, query, _filter(project, session, since, until), limit, regex)
    except (BadQuery, HistoryError) as exc:
        _fail(exc)
    out: dict = {"hits": [h.to_dict() for h in found.hits]}
    if found.stopped:
        out["stopped"] = found.stopped
    if not found.hits:
        out["note"] = "no match in history" + ("" if settings.history.enabled else " (history is turned off)")
    return out


def get_tool(settings: Settings, session: str, messages: str, context: int = 2) -> list[dict]:
    from memory.history.query import BadQuery, get
    from memory.history.store import HistoryError, HistoryStore

    try:
        with HistoryStore.open(settings.history) as store:
            return get(store, session, messages, context)
    except (BadQuery, HistoryError) as exc:
        _fail(exc)


def _fail(exc: Exception) -> NoReturn:
    raise HistoryToolError(str(exc)) from None
