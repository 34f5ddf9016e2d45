"""`ctxmill stats [--json] [--rows N]`: what ctxmill saved, from the savings ledger.

Totals, then per project, per day and per session: requests, tokens before and after
compression, modelled cost without and with ctxmill at the models' list prices, and markers
expanded. Every face writes the ledger (the proxy, `ctxmill run`, OpenCode, `ctxmill compress`,
expansions through `ctxmill expand` and the MCP server); it lives in the user's ctxmill folder.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="show what ctxmill saved (tokens and modelled cost)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.add_argument("--rows", type=int, default=10, metavar="N", help="rows per table in the text form (default 10)")
    p.set_defaults(func=run, logs=False)


def run(args: argparse.Namespace) -> int:
    from ctxmill.errors import CliError
    from ctxmill.ledger.report import render, summary
    from ctxmill.ledger.store import Ledger, LedgerError
    from ctxmill.paths import ledger_file

    try:
        with Ledger.open(ledger_file()) as ledger:
            data = summary(ledger)
    except LedgerError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        import orjson

        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(render(data, max(1, args.rows)))
    return 0
