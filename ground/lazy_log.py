"""Warnings from short-lived processes, with the log set up only when one is written.

A hook starts a process per prompt and almost never logs, while `logging` and the face's
redacting file handler cost it ~6 ms of imports. So such a face registers its set-up with
`on_first_warning` instead of running it, and code that warns calls `warning`, which runs the
set-up (once) before the first record. Must hold: a warning reaches the same handlers as when the
set-up ran at start; without a registered set-up, `warning` is `logging.getLogger(name).warning`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a hook's process does not import typing for this
if TYPE_CHECKING:
    from collections.abc import Callable

_pending: list[Callable[[], None]] = []


def on_first_warning(set_up: Callable[[], None]) -> None:
    """Run `set_up()` before the first warning this process logs through `warning`."""
    _pending.append(set_up)


def set_up() -> None:
    """Run the pending set-up now (work that will log anyway, such as a detached consolidation)."""
    while _pending:
        _pending.pop(0)()


def warning(name: str, message: str, *args: object) -> None:
    """`logging.getLogger(name).warning(message, *args)`, after any pending set-up."""
    set_up()
    import logging

    logging.getLogger(name).warning(message, *args)
