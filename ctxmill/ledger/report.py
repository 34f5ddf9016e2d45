"""What the ledger holds, rolled up: the data of `ctxmill stats --json` and of the dashboard.

`summary(ledger)` gives totals, then per project, per day (oldest first), per session (latest
first, at most `max_sessions`), per stage and per kind of content; `session_requests` one
session's requests in order. Money is in dollars, rounded to `MONEY_DIGITS` decimals, so the
same ledger always gives the same figures everywhere (the page shows what `stats --json` says).
"""

from __future__ import annotations

from typing import Any

from ctxmill.ledger.store import Ledger

MONEY_DIGITS = 6
MAX_SESSIONS = 200
STAGE_KINDS: dict[str, str] = {
    "decide_on_arrival": "command and search output",
    "trim_outputs": "tool output",
    "crush_json": "JSON results",
    "dedup_tool_calls": "repeated tool output",
    "purge_errors": "failed calls",
    "supersede_inputs": "write and edit bodies",
    "strip_reasoning": "reasoning",
    "strip_injections": "injected reminders",
    "compress_prose": "assistant prose",
    "nudges": "reminders added",
}
"""The kind of content each stage shortens (the pipeline's stages, compress.pipeline.DEFAULT_STAGES)."""

_SUMS = ("COUNT(*) AS requests, COALESCE(SUM(tokens_before), 0) AS tokens_before, "
         "COALESCE(SUM(tokens_after), 0) AS tokens_after, COALESCE(SUM(cost_without), 0) AS cost_without, "
         "COALESCE(SUM(cost_with), 0) AS cost_with")


def _figures(row: dict[str, Any]) -> dict[str, Any]:
    """`row` with its savings added and its money rounded."""
    row["tokens_saved"] = row["tokens_before"] - row["tokens_after"]
    for key in ("cost_without", "cost_with"):
        row[key] = round(row[key], MONEY_DIGITS)
    row["cost_saved"] = round(row["cost_without"] - row["cost_with"], MONEY_DIGITS)
    return row


def _expansions(ledger: Ledger, column: str) -> dict[str, int]:
    return {r["k"]: r["n"] for r in ledger.query(f"SELECT {column} AS k, COUNT(*) AS n FROM expansions GROUP BY k")}


def summary(ledger: Ledger, max_sessions: int = MAX_SESSIONS) -> dict[str, Any]:
    totals = _figures(ledger.query(f"SELECT {_SUMS}, COUNT(DISTINCT session) AS sessions,"
                                   " COUNT(DISTINCT project_id) AS projects FROM requests")[0])
    totals["expansions"] = ledger.query("SELECT COUNT(*) AS n FROM expansions")[0]["n"]
    by_project = _expansions(ledger, "project_id")
    projects = [_figures(r) | {"expansions": by_project.get(r["project_id"], 0)} for r in ledger.query(
        f"SELECT project_id, MAX(project) AS project, {_SUMS} FROM requests GROUP BY project_id"
        " ORDER BY cost_without - cost_with DESC, project_id")]
    by_day = _expansions(ledger, "day")
    days = {r["day"]: _figures(r) | {"expansions": by_day.get(r["day"], 0)}
            for r in ledger.query(f"SELECT day, {_SUMS} FROM requests GROUP BY day")}
    for day, n in by_day.items():  # a day with expansions only
        days.setdefault(day, _figures({"day": day, "requests": 0, "tokens_before": 0, "tokens_after": 0,
                                       "cost_without": 0.0, "cost_with": 0.0}) | {"expansions": n})
    by_session = _expansions(ledger, "session")
    sessions = [_figures(r) | {"expansions": by_session.get(r["session"], 0)} for r in ledger.query(
        f"SELECT session, MAX(face) AS face, MAX(project) AS project, MAX(model) AS model,"
        f" MIN(ts) AS first, MAX(ts) AS last, {_SUMS} FROM requests GROUP BY session"
        " ORDER BY last DESC, session LIMIT ?", (max_sessions,))]
    stages = ledger.query("SELECT stage, SUM(tokens) AS tokens FROM stage_savings GROUP BY stage"
                          " ORDER BY tokens DESC, stage")
    kinds: dict[str, int] = {}
    for row in stages:
        row["kind"] = STAGE_KINDS.get(row["stage"], "other")
        kinds[row["kind"]] = kinds.get(row["kind"], 0) + row["tokens"]
    return {"totals": totals, "projects": projects, "days": [days[d] for d in sorted(days)],
            "sessions": sessions, "stages": stages,
            "kinds": [{"kind": k, "tokens": n} for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]}


def session_requests(ledger: Ledger, session: str) -> list[dict[str, Any]]:
    """One session's requests in the order they were made: time, tokens before/after, costs."""
    return [_figures(r) for r in ledger.query(
        "SELECT ts, model, face, 1 AS requests, tokens_before, tokens_after, cost_without, cost_with FROM requests"
        " WHERE session = ? ORDER BY ts, id", (session,))]


def render(data: dict[str, Any], rows: int = 10) -> str:
    """`summary` as text for `ctxmill stats`: totals, then the top projects, days and sessions."""
    t = data["totals"]
    if not t["requests"] and not t["expansions"]:
        return "ctxmill has recorded no requests yet (the proxy, `ctxmill run`, OpenCode and `ctxmill compress` record them)."
    lines = [f"{t['requests']:,} requests in {t['sessions']:,} sessions, {t['projects']:,} projects: "
             f"{t['tokens_before']:,} -> {t['tokens_after']:,} tokens ({_pct(t)} saved), "
             f"{_money(t['cost_without'])} -> {_money(t['cost_with'])} ({_money(t['cost_saved'])} saved); "
             f"{t['expansions']:,} markers expanded"]
    for title, key, items in (("per project", "project", data["projects"]), ("per day", "day", data["days"][::-1]),
                              ("per session", "session", data["sessions"])):
        lines += ["", f"{title} (top {min(rows, len(items))} of {len(items)}):"]
        lines += [f"  {str(r[key] or '-')[:28]:28} {r['requests']:6,} req  {r['tokens_before']:>13,} -> "
                  f"{r['tokens_after']:>13,} ({_pct(r):>6})  {_money(r['cost_without']):>10} -> {_money(r['cost_with']):>10}"
                  f"  {r['expansions']:4,} exp" for r in items[:rows]]
    return "\n".join(lines)


def _pct(row: dict[str, Any]) -> str:
    return f"{100 * row['tokens_saved'] / row['tokens_before']:.1f}%" if row["tokens_before"] else "0%"


def _money(dollars: float) -> str:
    """Dollars with cents, or with four decimals under a dollar (a short session costs cents)."""
    return f"${dollars:,.2f}" if abs(dollars) >= 1 else f"${dollars:.4f}"
