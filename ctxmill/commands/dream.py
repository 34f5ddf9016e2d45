"""`ctxmill dream [--if-due]`: consolidate notes.md into MEMORY.md (see memory.dream)."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    parser = subparsers.add_parser("dream", help="consolidate notes.md and checkpoints into MEMORY.md")
    parser.add_argument("--if-due", action="store_true", help="only when due (7 days passed or > 20 notes)")
    parser.set_defaults(func=run)


def describe(result) -> str:
    if result is None:
        return "not due"
    what = "changed" if result.changed else "nothing to change"
    backup = f"; previous MEMORY.md kept as {result.backup}" if result.backup else ""
    return (f"{what}: MEMORY.md {result.before} -> {result.after} entries, {result.notes} notes consumed, "
            f"{result.merged} merged, {result.superseded} superseded{backup}")


def run(args: argparse.Namespace) -> int:
    from ctxmill.errors import CliError
    from ctxmill.settings import Settings
    from memory.dream import DreamRefused, dream, maybe_dream, record_run

    cfg = Settings.load().memory
    try:
        if args.if_due:
            result = maybe_dream(cfg)
        else:
            result = dream(cfg)
            record_run(cfg, result)
    except DreamRefused as exc:
        raise CliError(str(exc)) from None
    print(describe(result))
    return 0
