"""What the proxy records of the requests it served, and where it shows them (from `ctxmill.proxy.app`).

`ledger_row` is one proxied request as the savings ledger keeps it (`ctxmill.ledger`);
`team_ledger(config)` the writer the proxy adds them to: rows in batches off the event loop
(`ctxmill.ledger.batch`), to the user's ledger file, or with a shared store to the team's ledger
in it (`ctxmill.ledger.team`). `dashboard(config)` is the app mounted at `/ctxmill/`, over the
same ledger (the team's, brought up to date on each look).
"""

from __future__ import annotations

import logging
from pathlib import Path

from compress.formats.usage import Usage
from ctxmill.paths import ledger_file
from ctxmill.proxy.sessions import Outcome
from ctxmill.proxy_config import ProxyConfig

log = logging.getLogger("ctxmill.proxy")


def ledger_row(session: str, vendor: str, outcome: Outcome, usage: Usage | None, folder: str | None):
    """A proxied request as the ledger keeps it: what was sent (a deferred or failed run sent the
    original: nothing saved; a run still going counts its tokens as unknown, 0)."""
    from ctxmill.ledger import project_of, request_row

    s = outcome.summary
    ran = s is not None and not s.error and not outcome.error
    before = s.tokens_before if s is not None and ran else 0
    saved = s is not None and ran and not outcome.deferred
    return request_row(face="proxy", session=session, project=project_of(folder), model=s.model if s else "",
                       vendor=vendor, tokens_before=before,
                       tokens_after=s.tokens_after if s is not None and saved else before,
                       usage=usage, stages=s.stages if s is not None and saved else None,
                       deferred=outcome.deferred)


def team_ledger(config: ProxyConfig):
    """The ledger writer: the team's (in the shared store) or the user's file; None with
    persist=False (tests, benchmarks)."""
    if not config.persist:
        return None
    from ctxmill.ledger.batch import FileSink, LedgerWriter

    if config.store is not None:
        from ctxmill.ledger.team import TeamSink

        return LedgerWriter(TeamSink(config.store))
    return LedgerWriter(FileSink(config.ledger_file or ledger_file()))


def dashboard(config: ProxyConfig):
    """The dashboard at /ctxmill/: the proxy's ledger (the team's with a shared store, brought up
    to date on each look: ctxmill.ledger.team; else its file, or the user's when it writes none)
    and the memory of the proxy's home project."""
    from ctxmill.dashboard.app import create_app as dashboard_app
    from ctxmill.settings import Settings

    def ledger() -> Path:
        if config.store is not None and config.persist:
            from ctxmill.ledger.team import cache_file, synced
            from ctxmill.paths import global_home

            cache = cache_file(global_home(), config.store)
            try:
                return synced(config.store, cache)
            except Exception as exc:  # noqa: BLE001 - Redis away: the copy as of the last look
                log.warning("team ledger not brought up to date: %s", type(exc).__name__)
                return cache
        return config.ledger_file or ledger_file()

    return dashboard_app(ledger, lambda: Settings.load(config.home))
