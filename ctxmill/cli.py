"""The `ctxmill` command line: one sub-command per module in ctxmill/commands/.

Each command module defines `register(subparsers)`, which adds its parser and sets
`func(args) -> int` as the default. Modules are imported lazily, only the one named
on the command line, so hooks and short commands start fast.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys

from ctxmill.errors import CliError

# command name -> module under ctxmill.commands
COMMANDS: dict[str, str] = {
    "compress": "compress",
    "expand": "expand",
    "memory": "memory",
    "hook": "hook",
    "checkpoint": "checkpoint",
    "dream": "dream",
    "install": "install",
    "uninstall": "uninstall",
    "doctor": "doctor",
    "mcp": "mcp",
    "replay": "replay",
    "proxy": "proxy",
    "run": "run",
    "engine": "engine",
    "map": "map",
    "merge-memory": "merge_memory",
}


def _parser(only: str | None) -> argparse.ArgumentParser:
    """The parser of command `only` alone (hooks run a command per prompt: building the others'
    parsers cost 2-3 ms), or of every command for the top-level help and errors."""
    parser = argparse.ArgumentParser(prog="ctxmill", description="Context compression and memory for coding agents.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        if only is None or only == name:
            importlib.import_module(f"ctxmill.commands.{module}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    first = next((a for a in argv if not a.startswith("-")), None)
    parser = _parser(first if first in COMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if getattr(args, "logs", True):  # a command whose code never logs sets logs=False: no `logging` import
        from ctxmill.logs import configure_logging

        configure_logging()
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"ctxmill {args.command}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # disk full, read-only folder, permission denied: one line, no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"ctxmill {args.command}: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def console() -> None:
    """The `ctxmill` command (and `python -m ctxmill`): `main`, then exit. The process ends right
    after, so its objects are frozen out of the interpreter's last garbage collections (20-30 ms
    of CPU after a Chinese memory search); reference counting still closes and flushes files."""
    code = main()
    gc.freeze()
    sys.exit(code)
