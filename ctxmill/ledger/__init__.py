"""The savings ledger's writers: the two calls every face makes (proxy, OpenCode engine, CLI, MCP).

`record_request(...)` after a request was compressed (and, through the proxy, answered);
`record_expansion(...)` when an original behind a marker was read. Both fail open: a ledger that
cannot be written logs one warning and the face goes on. Storage: `ctxmill.ledger.store`;
prices: `compress.model_prices`; what `ctxmill stats` and the dashboard read: `ctxmill.ledger.report`.
Long-running faces (the proxy, the LiteLLM guardrail) write `request_row`s in batches
(`ctxmill.ledger.batch`), to the user's file or, with a shared store, to the team's ledger in
it (`ctxmill.ledger.team`).

Modelled cost of one request at its model's list prices (`compress.model_prices.price_for`):
- with the provider's usage report: `with` is the report priced; `without` prices the same
  output plus the prompt part scaled by tokens_before / tokens_after (the uncompressed prompt with
  the same cache mix as the one sent);
- without one (CLI, OpenCode engine, a response with no usage): every prompt token at the
  uncached input price, before and after.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxmill.ledger.store import Project, RequestRow

log = logging.getLogger("ctxmill.ledger")


def project_of(folder: str | Path | None) -> Project:
    """The project a folder is: id = 16 hex of the SHA-256 of its resolved path, name = its base name."""
    if not folder:
        return Project()
    path = Path(folder).expanduser()
    try:
        path = path.resolve()
    except OSError:
        pass
    return Project(hashlib.sha256(str(path).encode("utf-8", "surrogateescape")).hexdigest()[:16], path.name or "/")


def modelled_costs(price, tokens_before: int, tokens_after: int, usage: Any = None) -> tuple[float, float]:
    """(cost without ctxmill, cost with it) in dollars, as the module docstring defines them."""
    if usage is None or not usage.prompt_total:
        return price.cost(input=tokens_before), price.cost(input=tokens_after)
    output = price.cost(output=usage.output)
    prompt = price.cost(input=usage.input, cache_read=usage.cache_read, cache_write=usage.cache_write)
    scale = tokens_before / tokens_after if tokens_after > 0 else 1.0
    return output + prompt * scale, output + prompt


def request_row(*, face: str, session: str, project: Project, model: str, vendor: str, tokens_before: int,
                tokens_after: int, usage: Any = None, stages: Mapping[str, int] | None = None) -> RequestRow:
    """One request as the ledger keeps it, priced. `usage`: the provider's report
    (`compress.formats.usage.Usage`), if any."""
    import time

    from compress.model_prices import price_for

    price = price_for(model, vendor)
    without, with_ = modelled_costs(price, tokens_before, tokens_after, usage)
    counts = {}
    if usage is not None and usage.prompt_total:
        counts = {"input": usage.input, "cache_read": usage.cache_read, "cache_write": usage.cache_write,
                  "output": usage.output, "reported": True}
    return RequestRow(face, session, project, model, price.name, tokens_before, tokens_after, without, with_,
                      stages=dict(stages or {}), ts=time.time(), **counts)


def record_request(*, path: Path | None = None, **fields: Any) -> None:
    """Add one request (`request_row`'s fields) to the ledger at `path` (default: the user's,
    `ctxmill.paths.ledger_file`)."""
    row = request_row(**fields)
    _write(path, lambda ledger: ledger.add_request(row))


def record_expansion(*, face: str, chars: int, session: str = "", project: Project | None = None,
                     path: Path | None = None) -> None:
    """Add one expansion (an original read back through a marker's key) to the ledger."""
    _write(path, lambda ledger: ledger.add_expansion(face, session, project or Project(), chars))


def _write(path: Path | None, fn) -> None:
    """Run `fn` on the ledger in one transaction; a write SQLite refused because another process
    held a lock is tried again (`ground.sqlitedb.retrying`); one that still fails is dropped with a
    warning (the ledger fails open)."""
    import sqlite3

    from ctxmill.ledger.store import Ledger
    from ctxmill.paths import ledger_file
    from ground.sqlitedb import StoreError, retrying

    target = path or ledger_file()

    def write() -> None:
        with Ledger.open(target) as ledger:
            fn(ledger)

    try:
        retrying(write)
    except (OSError, sqlite3.Error, StoreError) as exc:
        log.warning("ledger %s not written: %s", target, exc)

