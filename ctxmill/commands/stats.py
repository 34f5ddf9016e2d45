"""`ctxmill stats [--json] [--rows N] [--store URL]`: what ctxmill saved, from the savings ledger.

Totals, then per project, per day and per session: requests, tokens before and after
compression, modelled cost without and with ctxmill at the models' list prices, and markers
expanded. Every face writes the ledger (the proxy, `ctxmill run`, OpenCode, `ctxmill compress`,
expansions through `ctxmill expand` and the MCP server); it lives in the user's ctxmill folder.
With `--store URL` (or CTXMILL_STORE, or `[store]` in the user's config): the team's ledger,
every replica's and LiteLLM guardrail's requests, from the shared store (`ctxmill.ledger.team`).
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="show what ctxmill saved (tokens and modelled cost)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.add_argument("--rows", type=int, default=10, metavar="N", help="rows per table in the text form (default 10)")
    p.add_argument("--store", metavar="URL", help="the team's ledger in this shared store (default: CTXMILL_STORE, "
                                                  "else [store] url in the user's config.toml; none: your own ledger)")
    p.set_defaults(func=run, logs=False)


def run(args: argparse.Namespace) -> int:
    from ctxmill.errors import CliError
    from ctxmill.ledger.report import render, summary
    from ctxmill.ledger.store import Ledger, LedgerError

    try:
        with Ledger.open(_ledger_path(args.store)) as ledger:
            data = summary(ledger)
    except LedgerError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        import orjson

        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(render(data, max(1, args.rows)))
    return 0


def _ledger_path(store_url: str | None):
    """The user's ledger file, or with a shared store the local copy of the team's, brought up to date."""
    from ctxmill.errors import CliError
    from ctxmill.paths import ledger_file
    from ctxmill.settings import Settings

    settings = Settings.load(store=store_url)
    address = settings.store
    if address is None:
        return ledger_file()
    from ctxmill.ledger.team import cache_file, synced

    try:
        return synced(address, cache_file(settings.global_home, address))
    except ImportError as exc:
        raise CliError(str(exc)) from None
    except Exception as exc:
        if type(exc).__module__.split(".")[0] != "redis":
            raise
        raise CliError(f"the team's ledger at {address.shown} cannot be read: {type(exc).__name__}") from None
