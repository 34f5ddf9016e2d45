"""`ctxmill replay --html FILE`: the dashboard's charts for replayed sessions, as a standalone page.

The page is the dashboard's (`ctxmill.dashboard.app.page`, every script inlined, no network)
with the replay's figures in the ledger's shape: raw requests are "before", ctxmill's are "sent",
and the decide-once cap and any peer (headroom) are drawn beside them per request and compared
by cost, modelled and effective (modelled plus what re-reading the lines a side lost would
cost: `replay.pricing.SideStats.effective_cost`), so a side that is cheap because it hid what the
agent needed does not look cheaper than it is. Replay costs are in units of the base input
price (the replay's prompt-cache model); the page shows them in dollars at the list input price
of the price table's row for the session's provider (`compress.model_prices.price_for`), and
says so. A replay has no dates and no projects: the page draws no time axis and no project table,
and names sessions by their file. Takes the reports as they are (`ReplayReport`: `raw`,
`compressed`, `cap`, `peers`, each with `sizes`, `cost` and `effective_cost`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ctxmill.ledger.report import MONEY_DIGITS


def _money(value: float) -> float:
    return round(value, MONEY_DIGITS)


def _row(
    name: str,
    requests: int,
    before: int,
    after: int,
    without: float,
    with_: float,
    effective: float,
) -> dict[str, Any]:
    return {
        "session": name,
        "project": "",
        "requests": requests,
        "tokens_before": before,
        "tokens_after": after,
        "tokens_saved": before - after,
        "cost_without": _money(without),
        "cost_with": _money(with_),
        "cost_saved": _money(without - with_),
        "cost_effective_with": _money(effective),
        "expansions": 0,
    }


def replay_data(reports: Iterable[Any]) -> dict[str, Any]:
    """The page's data for `reports`: `{title, subtitle, note, summary, requests}`."""
    from compress.model_prices import price_for

    rows: list[dict[str, Any]] = []
    requests: dict[str, Any] = {}
    peers: dict[str, list[float]] = {}
    kinds: dict[str, float] = {}
    priced: set[str] = set()
    for report in reports:
        price = price_for("", "anthropic" if report.provider == "anthropic" else "openai")
        priced.add(price.name.removesuffix(" (fallback)"))
        dollars = price.input / 1e6
        name = Path(report.source).name
        raw, sent = report.raw, report.compressed
        rows.append(
            _row(
                name,
                report.requests,
                raw.tokens_sum,
                sent.tokens_sum,
                raw.cost * dollars,
                sent.cost * dollars,
                sent.effective_cost * dollars,
            )
        )
        others = {n: s for n, s in report.sides().items() if n not in ("raw", "ctxmill")}
        requests[name] = [
            {
                "tokens_before": b,
                "tokens_after": a,
                "cost_without": 0,
                "cost_with": 0,
                "extra": {n: (s.sizes[i] if i < len(s.sizes) else None) for n, s in others.items()},
            }
            for i, (b, a) in enumerate(zip(raw.sizes, sent.sizes, strict=False))
        ]
        for side, side_stats in report.sides().items():
            if side != "raw":
                total = peers.setdefault(side, [0.0, 0.0, 0.0])
                total[0] += side_stats.cost
                total[1] += side_stats.effective_cost
                total[2] += raw.cost
        for kind, cost in (report.by_kind.get("raw") or {}).items():
            kinds[kind] = (
                kinds.get(kind, 0.0)
                + (cost - report.by_kind.get("ctxmill", {}).get(kind, 0.0)) * dollars
            )
    totals = _row(
        "all",
        sum(r["requests"] for r in rows),
        sum(r["tokens_before"] for r in rows),
        sum(r["tokens_after"] for r in rows),
        sum(r["cost_without"] for r in rows),
        sum(r["cost_with"] for r in rows),
        sum(r["cost_effective_with"] for r in rows),
    )
    totals.update(sessions=len(rows), projects=0)
    by_kind = [
        {"kind": k, "tokens": _money(v)} for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])
    ]
    summary = {
        "kinds_label": "dollars saved",
        "totals": totals,
        "days": [],
        "sessions": rows,
        "projects": [],
        "models": [],
        "stages": [],
        "kinds": by_kind,
        "peers": [
            {
                "name": n,
                "cost_ratio": round(c / r, 4) if r else 1.0,
                "effective_ratio": round(e / r, 4) if r else 1.0,
            }
            for n, (c, e, r) in peers.items()
        ],
    }
    beside = ", ".join(p for p in peers if p != "ctxmill")
    return {
        "title": "ctxmill replay",
        "subtitle": f"Replay of {len(rows)} recorded session{'s' if len(rows) != 1 else ''}: "
        "raw requests "
        f"vs what ctxmill sends, beside {beside}",
        "note": "Modelled prompt-cache cost of the replay, in dollars at the list input price of "
        f"{', '.join(sorted(priced))}; effective cost adds what re-reading the lines a side lost, "
        "that the agent later needed, would cost. 'Compared' is each side's cost relative to "
        "the raw "
        "requests, modelled and effective."
        + ("" if kinds else " Add --by-kind for the savings by kind of content."),
        "summary": summary,
        "requests": requests,
    }


def write_html(reports: Iterable[Any], path: Path) -> None:
    """Write the standalone page for `reports` to `path` (atomically)."""
    import orjson

    from ctxmill.dashboard.app import page
    from ground.files import atomic_write

    atomic_write(
        path,
        page(data_json=orjson.dumps(replay_data(reports)).decode(), inline=True).encode("utf-8"),
        fsync=False,
    )
