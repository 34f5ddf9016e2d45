"""Where a time range's savings came from: each request's saving shared among the stages.

A stage's row in the ledger (`stage_savings`) counts what it removed when it first cut a piece
of content; the request that carried it later saves those tokens again without a stage row (the
cut text is resent as it was). So the headline, the sum of every request's tokens before minus
after, is shared out here instead: each request's saving goes to the stages in proportion to
what they had cut in its session up to and including that request (a reminder that added tokens
counts against). A request whose session has no stage row yet goes to `UNATTRIBUTED`.
Must hold: the shares are whole tokens and add up exactly to the headline of the same requests
(largest remainders), and they depend only on the ledger's rows.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

UNATTRIBUTED = ""
"""The stage name of savings no stage row explains (shown as "not attributed to a stage")."""


def saved_by_stage(ledger: Any, where: str, params: tuple) -> dict[str, int]:
    """stage -> tokens saved by the requests matching `where` (SQL on `requests`, with `params`),
    adding up to their tokens before minus after."""
    sessions = f"SELECT DISTINCT session FROM requests{where}"
    requests = ledger.query(
        f"SELECT id, session, tokens_before - tokens_after AS saved, {_inside(where)} AS inside"
        " FROM requests"
        f" WHERE session IN ({sessions}) ORDER BY session, ts, id",
        params + params,
    )
    stages: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for row in ledger.query(
        f"SELECT s.request, s.stage, s.tokens FROM stage_savings s JOIN requests r ON r.id ="
        f" s.request WHERE r.session IN ({sessions}) ORDER BY s.request, s.stage",
        params,
    ):
        stages[row["request"]].append((row["stage"], row["tokens"]))
    shares: dict[str, float] = defaultdict(float)
    mix: dict[str, float] = {}
    session = None
    for row in requests:
        if row["session"] != session:
            session, mix = row["session"], defaultdict(float)
        for stage, tokens in stages.get(row["id"], ()):
            mix[stage] += tokens
        if not row["inside"] or not row["saved"]:
            continue
        weight = sum(mix.values())
        if weight == 0:
            shares[UNATTRIBUTED] += row["saved"]
            continue
        for stage, cut in mix.items():
            if cut:
                shares[stage] += row["saved"] * cut / weight
    total = sum(r["saved"] for r in requests if r["inside"])
    return _whole(shares, total)


def _inside(where: str) -> str:
    """A SQL expression: 1 for a row `where` selects (the same condition), else 0."""
    return f"({where.removeprefix(' WHERE ')})" if where else "1"


def _whole(shares: dict[str, float], total: int) -> dict[str, int]:
    """`shares` as whole tokens adding up to `total` (floors, then the largest remainders)."""
    out = {k: math.floor(v) for k, v in shares.items()}
    left = total - sum(out.values())
    order = sorted(shares, key=lambda k: (-(shares[k] - out[k]), k))
    for i in range(max(0, left) if order else 0):
        out[order[i % len(order)]] += 1
    return {k: v for k, v in out.items() if v}
