"""The `ctxmill` command line: one sub-command per module in ctxmill/commands/.

Each command module defines `register(subparsers)`, which adds its parser and sets
`func(args) -> int` as the default. Modules are imported lazily, only the one named
on the command line, so hooks and short commands start fast; `ctxmill --version`,
`ctxmill --help` and a mistyped command import none (the listing's one-liners are
`SUMMARIES`; tests/test_cli_startup.py checks they say what each module registers).
"""

from __future__ import annotations

import gc
import sys

from ctxmill.errors import CliError
from ctxmill.mcp_tools import TOOLS

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a hook's process does not import typing for this
if TYPE_CHECKING:
    import argparse

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
    "stats": "stats",
    "dashboard": "dashboard",
    "history": "history",
    "import": "history",
    "distill": "distill",
    "merge-memory": "merge_memory",
}


SUMMARIES: dict[str, str] = {
    "compress": "compress one request body (Anthropic or OpenAI)",
    "expand": 'print the original text behind a deep_expand("KEY") marker',
    "memory": "durable project and global memory (MEMORY.md)",
    "hook": "answer a Claude Code hook (reads hook JSON on stdin)",
    "checkpoint": "summarize a session into .ctxmill/checkpoint.md",
    "dream": "consolidate notes.md and checkpoints into MEMORY.md",
    "install": "add ctxmill hooks or plugin, slash commands and MCP server to a host, and send its requests "
               "through the always-on proxy",
    "uninstall": "remove exactly what `ctxmill install` added",
    "doctor": "check the installation and say how to fix what is wrong",
    "mcp": f"run the MCP server on stdio ({', '.join(TOOLS)})",
    "replay": "replay a recorded session and report what ctxmill would save",
    "proxy": "serve the compressing API proxy (Anthropic and OpenAI)",
    "run": "run a command (e.g. claude) through a proxy of its own",
    "engine": "serve the pipeline to host plugins on a private Unix socket",
    "map": "print the repository map ranked for a prompt",
    "stats": "show what ctxmill saved (tokens and modelled cost)",
    "dashboard": "serve the savings dashboard in your browser",
    "history": "search and read past sessions (every project, secrets redacted)",
    "import": "add recorded sessions to history (same as `history import`)",
    "distill": "skill candidates from command sequences that recur across sessions",
    "merge-memory": "git merge driver for MEMORY.md / notes.md (entry by entry)",
}
"""What `ctxmill --help` lists for each command, without importing the commands."""


def _parser(only: str | None) -> argparse.ArgumentParser:
    """The parser of command `only` alone (hooks run a command per prompt: building the others'
    parsers cost 2-3 ms), or, for `--version`, the top-level help and errors, one that lists
    every command (`SUMMARIES`) without importing any."""
    import argparse

    class Version(argparse.Action):
        """`--version`: ctxmill's version, read only when asked."""

        def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
            super().__init__(option_strings, dest, nargs=0, help="print ctxmill's version and exit")

        def __call__(self, parser: argparse.ArgumentParser, namespace: object, values: object,
                     option_string: str | None = None) -> None:
            from ctxmill import package_version

            print(f"ctxmill {package_version()}")
            parser.exit()

    parser = argparse.ArgumentParser(prog="ctxmill", description="Context compression and memory for coding agents.")
    parser.add_argument("--version", action=Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only is None:
        for name, summary in SUMMARIES.items():
            sub.add_parser(name, help=summary, add_help=False)
        return parser
    import importlib

    importlib.import_module(f"ctxmill.commands.{COMMANDS[only]}").register(sub)
    return parser


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the deepest (sub)command `args` names (`ctxmill memory list` -> its parser)."""
    import argparse

    while True:
        subs = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if subs is None:
            return parser
        name = getattr(args, subs.dest, None)
        if name not in subs.choices:
            return parser
        parser = subs.choices[name]


def _hook_args(argv: list[str]) -> argparse.Namespace | None:
    """`ctxmill hook EVENT` as the host runs it, read without a parser (argparse and what it
    imports cost a process per prompt 3-5 ms): the namespace the parser would give (a
    `types.SimpleNamespace`, which reads the same); None for anything else, which the parser reads."""
    if len(argv) != 2 or argv[0] != "hook":
        return None
    from types import SimpleNamespace

    from ctxmill.commands import hook

    if argv[1] not in hook.EVENTS:
        return None
    return SimpleNamespace(command="hook", event=argv[1], store=None, func=hook.run, logs=False)  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _hook_args(argv)
    if args is None:
        first = next((a for a in argv if not a.startswith("-")), None)
        parser = _parser(first if first in COMMANDS else None)
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # said by the (sub)command they were given to, with its usage
            _chosen(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
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
