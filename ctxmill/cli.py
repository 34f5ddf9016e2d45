"""The `ctxmill` command line: one sub-command per module in ctxmill/commands/.

Each command module defines `register(subparsers)`, which adds its parser and sets
`func(args) -> int` as the default. Modules are imported lazily, only the one named
on the command line, so hooks and short commands start fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from pathlib import Path

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
}


class CliError(Exception):
    """A usage or input problem reported as one line on stderr with exit code 2."""


def _parser(only: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctxmill", description="Context compression and memory for coding agents.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        if only is None or only == name:
            importlib.import_module(f"ctxmill.commands.{module}").register(sub)
        else:
            sub.add_parser(name, help=f"see `ctxmill {name} --help`")
    return parser


class _LazyFileHandler(logging.FileHandler):
    """Appends to the log file (0600 in a 0700 folder), created only when something is logged."""

    def _open(self):  # noqa: ANN202 - logging's signature
        from ground.files import private_dir, private_file

        private_file(private_dir(Path(self.baseFilename).parent) / Path(self.baseFilename).name)
        return super()._open()


class RedactingFilter(logging.Filter):
    """Redacts secrets from every record (message and arguments) before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        from ground.redact import redact

        message = record.getMessage()
        if record.exc_info:
            message += "\n" + logging.Formatter().formatException(record.exc_info)
            record.exc_info, record.exc_text = None, None
        record.msg, record.args = redact(message), None
        return True


def redact_every_record() -> None:
    """Redact secrets in every log record this process creates, whatever the logger or handler
    (the proxy's uvicorn and stderr handlers included). Installed once."""
    make = logging.getLogRecordFactory()
    if getattr(make, "redacts", False):
        return
    redacting = RedactingFilter()

    def factory(*args, **kwargs):  # noqa: ANN202 - logging's signature
        record = make(*args, **kwargs)
        redacting.filter(record)
        return record

    factory.redacts = True
    logging.setLogRecordFactory(factory)


def configure_logging(log_file: Path | None = None) -> None:
    """Library warnings go to `log_file` (default `<project home>/ctxmill.log`), never to the
    agent's terminal."""
    from ctxmill.paths import project_home

    logger = logging.getLogger("ctxmill")
    if logger.handlers:
        return
    logger.propagate = False
    handler = _LazyFileHandler(log_file or project_home() / "ctxmill.log", delay=True, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    redact_every_record()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def log_file() -> Path | None:
    """The file `configure_logging` set up in this process, if any (worker processes reuse it)."""
    for handler in logging.getLogger("ctxmill").handlers:
        if isinstance(handler, logging.FileHandler):
            return Path(handler.baseFilename)
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    configure_logging()
    first = next((a for a in argv if not a.startswith("-")), None)
    parser = _parser(first if first in COMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
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
