"""What the ledger holds, rolled up: the data of `ctxmill stats --json` and of the dashboard.

`summary(ledger, since=None, until=None)` gives, for the requests and expansions recorded in
[since, until) (seconds since the epoch; None: no bound), totals, then per project, per model,
per day (oldest first), per session (latest first, at most `max_sessions`), per stage and per
kind of content: `stages`/`kinds` what each stage removed when it first cut something,
`saved_by_stage`/`saved_by_kind` the headline's tokens saved shared among them
(`ctxmill.ledger.attribution`: they add up to `totals.tokens_saved`); `session_requests` one
session's requests in order. Money is in dollars, rounded to `MONEY_DIGITS` decimals, so the
same ledger always gives the same figures everywhere (the page shows what `stats --json` says).
"""

from __future__ import annotations

from typing import Any

from ctxmill.ledger.store import Ledger

MONEY_DIGITS = 6
MAX_SESSIONS = 200
STAGE_KINDS: dict[str, str] = {
    "reread_pointers": "reads shown again (adds tokens)",
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
"""The kind of content each stage shortens (the pipeline's stages, compress.runner.pipeline.DEFAULT_STAGES)."""

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


def _expansions(ledger: Ledger, column: str, where: str = "", params: tuple = ()) -> dict[str, int]:
    return {r["k"]: r["n"] for r in ledger.query(
        f"SELECT {column} AS k, COUNT(*) AS n FROM expansions{where} GROUP BY k", params)}


def _range(since: float | None, until: float | None, column: str = "ts") -> tuple[str, tuple]:
    """A WHERE clause on `column` for [since, until), and its parameters ("" when unbounded)."""
    bounds = [(f"{column} {op} ?", v) for op, v in ((">=", since), ("<", until)) if v is not None]
    where = " WHERE " + " AND ".join(b for b, _ in bounds) if bounds else ""
    return where, tuple(v for _, v in bounds)


def summary(ledger: Ledger, max_sessions: int = MAX_SESSIONS, since: float | None = None,
            until: float | None = None) -> dict[str, Any]:
    from ctxmill.ledger.attribution import UNATTRIBUTED, saved_by_stage

    where, params = _range(since, until)
    totals = _figures(ledger.query(
        f"SELECT {_SUMS}, COUNT(DISTINCT session) AS sessions,"
        f" COUNT(DISTINCT project_id) AS projects FROM requests{where}", params)[0])
    totals["expansions"] = ledger.query(f"SELECT COUNT(*) AS n FROM expansions{where}",
                                        params)[0]["n"]
    by_project = _expansions(ledger, "project_id", where, params)
    projects = [_figures(r) | {"expansions": by_project.get(r["project_id"], 0)} for r in ledger.query(
        f"SELECT project_id, MAX(project) AS project, {_SUMS} FROM requests{where}"
        " GROUP BY project_id ORDER BY cost_without - cost_with DESC, project_id", params)]
    models = [_figures(r) for r in ledger.query(
        f"SELECT model, MAX(priced_as) AS priced_as, {_SUMS} FROM requests{where} GROUP BY model"
        " ORDER BY cost_without - cost_with DESC, model", params)]
    by_day = _expansions(ledger, "day", where, params)
    days = {r["day"]: _figures(r) | {"expansions": by_day.get(r["day"], 0)}
            for r in ledger.query(f"SELECT day, {_SUMS} FROM requests{where} GROUP BY day", params)}
    for day, n in by_day.items():  # a day with expansions only
        days.setdefault(day, _figures({"day": day, "requests": 0, "tokens_before": 0, "tokens_after": 0,
                                       "cost_without": 0.0, "cost_with": 0.0}) | {"expansions": n})
    by_session = _expansions(ledger, "session", where, params)
    sessions = [_figures(r) | {"expansions": by_session.get(r["session"], 0)} for r in ledger.query(
        f"SELECT session, MAX(face) AS face, MAX(project) AS project, MAX(model) AS model,"
        f" MIN(ts) AS first, MAX(ts) AS last, {_SUMS} FROM requests{where} GROUP BY session"
        " ORDER BY last DESC, session LIMIT ?", params + (max_sessions,))]
    in_range = _range(since, until, "r.ts")[0]
    stages = ledger.query(
        "SELECT stage, SUM(tokens) AS tokens FROM stage_savings s JOIN requests r"
        f" ON r.id = s.request{in_range} GROUP BY stage ORDER BY tokens DESC, stage", params)
    for row in stages:
        row["kind"] = STAGE_KINDS.get(row["stage"], "other")
    saved = saved_by_stage(ledger, where, params)
    by_stage = [{"stage": stage, "tokens": n,
                 "kind": UNATTRIBUTED if stage == UNATTRIBUTED else STAGE_KINDS.get(stage, "other")}
                for stage, n in sorted(saved.items(), key=lambda kv: (-kv[1], kv[0]))]
    return {"totals": totals, "range": {"since": since, "until": until}, "projects": projects,
            "models": models, "days": [days[d] for d in sorted(days)], "sessions": sessions,
            "stages": stages, "kinds": _by_kind(stages), "saved_by_stage": by_stage,
            "saved_by_kind": _by_kind(by_stage)}


def _by_kind(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of {stage, kind, tokens} summed per kind, most first."""
    kinds: dict[str, int] = {}
    for row in rows:
        kinds[row["kind"]] = kinds.get(row["kind"], 0) + row["tokens"]
    ordered = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"kind": k, "tokens": n} for k, n in ordered]


def session_requests(ledger: Ledger, session: str) -> list[dict[str, Any]]:
    """One session's requests in the order they were made: time, tokens before/after, costs."""
    return [_figures(r) for r in ledger.query(
        "SELECT ts, model, face, 1 AS requests, tokens_before, tokens_after, cost_without, cost_with FROM requests"
        " WHERE session = ? ORDER BY ts, id", (session,))]


def render(data: dict[str, Any], rows: int = 10) -> str:
    """`summary` as text for `ctxmill stats`: totals, then the top projects, models, days and
    sessions."""
    t = data["totals"]
    if not t["requests"] and not t["expansions"]:
        return "ctxmill has recorded no requests yet (the proxy, `ctxmill run`, OpenCode and `ctxmill compress` record them)."
    lines = [f"{t['requests']:,} requests in {t['sessions']:,} sessions, {t['projects']:,} projects: "
             f"{t['tokens_before']:,} -> {t['tokens_after']:,} tokens ({_pct(t)} saved), "
             f"{_money(t['cost_without'])} -> {_money(t['cost_with'])} ({_money(t['cost_saved'])} saved); "
             f"{t['expansions']:,} markers expanded"]
    tables = (("per project", "project", data["projects"]), ("per model", "model", data["models"]),
              ("per day", "day", data["days"][::-1]), ("per session", "session", data["sessions"]))
    for title, key, items in tables:
        lines += ["", f"{title} (top {min(rows, len(items))} of {len(items)}):"]
        lines += [f"  {str(r[key] or '-')[:28]:28} {r['requests']:6,} req  {r['tokens_before']:>13,} -> "
                  f"{r['tokens_after']:>13,} ({_pct(r):>6})  {_money(r['cost_without']):>10} -> {_money(r['cost_with']):>10}"
                  + (f"  {r['expansions']:4,} exp" if "expansions" in r else "")
                  for r in items[:rows]]
    return "\n".join(lines)


def _pct(row: dict[str, Any]) -> str:
    return f"{100 * row['tokens_saved'] / row['tokens_before']:.1f}%" if row["tokens_before"] else "0%"


def _money(dollars: float) -> str:
    """Dollars with cents, or with four decimals under a dollar (a short session costs cents)."""
    return f"${dollars:,.2f}" if abs(dollars) >= 1 else f"${dollars:.4f}"
