"""The faces' logging: warnings go to a private log file, never to the agent's terminal, and every
record is redacted before any handler sees it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a hook's process does not import typing for this
if TYPE_CHECKING:
    from typing import Any


class _LazyFileHandler(logging.FileHandler):
    """Appends to the log file (0600 in a 0700 folder), created only when something is logged,
    never through a symbolic link (a cloned repository's `.ctxmill/ctxmill.log -> ~/.bashrc`).
    A log file that cannot be created or written (the home is a file, a read-only disk, a link)
    drops the record: logging never fails the command that logs."""

    def _open(self):  # logging's signature
        import os

        from ground.files import open_private

        fd = open_private(Path(self.baseFilename), os.O_WRONLY | os.O_APPEND)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            super().emit(record)
        except OSError:
            self.close()  # opened again for the next record

    def handleError(self, record: logging.LogRecord) -> None:  # logging's name
        """A record that could not be written (a full disk) is dropped: no "--- Logging error ---"
        traceback on the terminal of the command that logged it."""
        self.close()


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


class _RedactingFactory:
    """A log record factory that redacts each record `make` creates."""

    redacts = True

    def __init__(self, make: Callable[..., logging.LogRecord]) -> None:
        self._make, self._redacting = make, RedactingFilter()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:  # logging's signature
        record = self._make(*args, **kwargs)
        self._redacting.filter(record)
        return record


def redact_every_record() -> None:
    """Redact secrets in every log record this process creates, whatever the logger or handler
    (the proxy's uvicorn and stderr handlers included). Installed once."""
    make = logging.getLogRecordFactory()
    if getattr(make, "redacts", False):
        return
    logging.setLogRecordFactory(_RedactingFactory(make))


def configure_logging(log_file: Path | None = None) -> None:
    """Library warnings go to `log_file` (default `<project home>/ctxmill.log`), never to the
    agent's terminal."""
    from ctxmill.paths import project_home

    logger = logging.getLogger("ctxmill")
    if logger.handlers:
        return
    try:
        log_file = log_file or project_home() / "ctxmill.log"
    except OSError:  # the working directory is gone: no project home, no log
        return
    logger.propagate = False
    handler = _LazyFileHandler(log_file, delay=True, encoding="utf-8")
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


def configure_server_logging(level: str = "info", log_file: Path | None = None) -> None:
    """A long-running server's logging (the proxy and its workers): every record at `level` and
    above to stderr and, when given, appended to `log_file` (0600, never through a link); all of
    it redacted. Replaces what the command line set up (its project log file)."""
    redact_every_record()
    formatter = logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_file is not None:
        handlers.append(_LazyFileHandler(log_file, delay=True, encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = handlers
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    ours = logging.getLogger("ctxmill")
    ours.handlers.clear()
    ours.propagate = True
    ours.setLevel(logging.NOTSET)
