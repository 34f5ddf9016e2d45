"""Reading the history store: `search` (words or a regular expression) and `get` (messages with
their neighbours). Both take filters by project, session and time.

Must hold: words are the store's terms (`HistoryStore.terms`; a query's first `MAX_TERMS`
distinct ones), any of them matching, ranked by FTS5's BM25; a regular expression is compiled by
the `regex` module and run with a time limit (`HistoryConfig.regex_seconds` in all), newest
sessions first, so a pathological pattern ends with the hits found so far and says it stopped
(`Found.stopped`); bad input raises `BadQuery` with a one-line reason. Results are deterministic
for a given store.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from memory.history.store import HistoryStore, project_filter

SNIPPET_CHARS = 240
MAX_GET_CHARS = 16_000
MAX_TERMS = 64
"""A query's first this many distinct terms are searched for."""


class BadQuery(ValueError):
    """A query that cannot run (empty, a bad pattern, a bad range or time); the message says why."""


@dataclass(frozen=True)
class Filter:
    project: str | None = None
    """A project's path, or its folder's name."""
    session: str | None = None
    """A session key, or its start."""
    since: float | None = None
    until: float | None = None
    """Sessions last updated within [since, until] (seconds since the epoch)."""


@dataclass(frozen=True)
class Hit:
    session: str
    seq: int
    role: str
    project: str
    updated: str
    snippet: str
    score: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Found:
    hits: list[Hit] = field(default_factory=list)
    stopped: str = ""
    """Why a regular-expression search stopped before it read every message ('' when it did not)."""


def when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts)) + "Z"


def parse_time(text: str | None, now: float | None = None) -> float | None:
    """`7d`, `12h`, `30m` ago, or an ISO date / date-time (UTC unless it says otherwise)."""
    if text is None or not str(text).strip():
        return None
    text = str(text).strip()
    now = time.time() if now is None else now
    units = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    if text[-1:] in units and text[:-1].isdigit():
        return now - int(text[:-1]) * units[text[-1]]
    from ground.times import iso_seconds

    moment = iso_seconds(text)
    if moment is None:
        raise BadQuery(f"bad time {text!r}: use 7d, 12h, 30m or an ISO date such as 2026-11-20")
    return moment


def _where(flt: Filter) -> tuple[str, list]:
    clause, params = project_filter(flt.project)
    parts, values = [clause], list(params)
    if flt.session:
        parts.append("(s.key = ? OR substr(s.key, 1, ?) = ?)")
        values += [flt.session, len(flt.session), flt.session]
    if flt.since is not None:
        parts.append("s.updated >= ?")
        values.append(flt.since)
    if flt.until is not None:
        parts.append("s.updated <= ?")
        values.append(flt.until)
    return " AND ".join(parts), values


def _snippet(text: str, start: int, end: int) -> str:
    left = max(0, start - SNIPPET_CHARS // 3)
    right = min(len(text), max(end, left + SNIPPET_CHARS))
    body = " ".join(text[left:right].split())
    return ("…" if left else "") + body + ("…" if right < len(text) else "")


def search(store: HistoryStore, query: str, flt: Filter = Filter(), limit: int = 10, regex: bool = False) -> Found:
    if not query or not query.strip():
        raise BadQuery("empty query")
    limit = max(1, min(int(limit), 100))
    return _regex_search(store, query, flt, limit) if regex else _word_search(store, query, flt, limit)


def _word_search(store: HistoryStore, query: str, flt: Filter, limit: int) -> Found:
    terms = list(dict.fromkeys(store.terms(query)))[:MAX_TERMS]
    if not terms:
        raise BadQuery(f"no search terms in {query!r} (only stopwords or punctuation): try other words or regex")
    match = " OR ".join(f'"{t}"' for t in terms)
    where, params = _where(flt)
    rows = store.conn.execute(
        "SELECT s.key, m.seq, m.role, s.project, s.updated, m.text, bm25(terms) AS score FROM terms"
        " JOIN messages m ON m.id = terms.rowid JOIN sessions s ON s.id = m.session"
        f" WHERE terms MATCH ? AND {where} ORDER BY score, s.updated DESC, m.seq LIMIT ?", (match, *params, limit))
    words = [w.lower() for w in query.split() if len(w) > 1]
    hits = []
    for key, seq, role, project, updated, text, score in rows:
        low = text.lower()
        at = min((i for i in (low.find(w) for w in words) if i >= 0), default=0)
        hits.append(Hit(key, seq, role, project, when(updated), _snippet(text, at, at), round(-score, 3)))
    return Found(hits)


def _regex_search(store: HistoryStore, pattern: str, flt: Filter, limit: int) -> Found:
    import regex

    try:
        compiled = regex.compile(pattern, regex.MULTILINE)
    except regex.error as exc:
        raise BadQuery(f"bad regular expression {pattern!r}: {exc}") from None
    deadline = time.monotonic() + store.cfg.regex_seconds
    where, params = _where(flt)
    rows = store.conn.execute(
        "SELECT s.key, m.seq, m.role, s.project, s.updated, m.text FROM messages m JOIN sessions s ON s.id = m.session"
        f" WHERE {where} ORDER BY s.updated DESC, s.id DESC, m.seq", params)
    found = Found()
    for key, seq, role, project, updated, text in rows:
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            hit = compiled.search(text, timeout=left)
        except TimeoutError:
            found.stopped = f"stopped after {store.cfg.regex_seconds:g} s: narrow the pattern or filter by project, session or time"
            break
        if hit:
            found.hits.append(Hit(key, seq, role, project, when(updated), _snippet(text, hit.start(), hit.end())))
            if len(found.hits) >= limit:
                break
    return found


def parse_range(text: str | int) -> tuple[int, int]:
    """`12` or `10:20` (inclusive) -> (first, last)."""
    value = str(text).strip()
    try:
        if ":" in value:
            first, last = value.split(":", 1)
            return int(first or 0), int(last) if last else 1 << 30
        return int(value), int(value)
    except ValueError:
        raise BadQuery(f"bad message range {text!r}: use a number such as 12 or a range such as 10:20") from None


def get(store: HistoryStore, session: str, messages: str | int, context: int = 2) -> list[dict]:
    """The messages of `session` (a key or its start) in range `messages`, with `context`
    neighbours on each side: [{session, seq, role, text}] (text cut to MAX_GET_CHARS)."""
    if not isinstance(session, str) or not session.strip():
        raise BadQuery("no session given (`history list` / history_search name them)")
    first, last = parse_range(messages)
    context = max(0, min(int(context), 20))
    keys = [k for (k,) in store.conn.execute(
        "SELECT key FROM sessions WHERE key = ? OR substr(key, 1, ?) = ? ORDER BY key = ? DESC, key LIMIT 2",
        (session, len(session), session, session))]
    if not keys:
        raise BadQuery(f"no session {session!r} in history (`history list` / history_search name them)")
    if len(keys) > 1 and keys[0] != session:
        raise BadQuery(f"{session!r} names more than one session ({keys[0]}, {keys[1]}, …): give more of the key")
    lo, hi = max(0, first - context), last + context
    if hi - lo > 200:
        raise BadQuery("at most 200 messages at a time")
    rows = store.conn.execute(
        "SELECT m.seq, m.role, m.text FROM messages m JOIN sessions s ON s.id = m.session"
        " WHERE s.key = ? AND m.seq BETWEEN ? AND ? ORDER BY m.seq", (keys[0], lo, hi))
    out = []
    for seq, role, text in rows:
        if len(text) > MAX_GET_CHARS and hi > lo:
            text = text[:MAX_GET_CHARS] + f"\n[… {len(text) - MAX_GET_CHARS:,} more characters: ask for message {seq} alone]"
        out.append({"session": keys[0], "seq": seq, "role": role, "text": text})
    return out
