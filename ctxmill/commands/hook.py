"""`ctxmill hook EVENT`: answer one Claude Code hook (JSON on stdin, JSON on stdout; see ctxmill.hooks).

Fails open, always: bad input, an unusable project home (a file, a read-only disk), any error, or
running past the event's time budget gives exit 0, no output and one line on stderr (also written
to the project log, `.ctxmill/ctxmill.log`, when it can be). The budget is kept twice: SIGALRM
interrupts the handler's Python code, and the handler runs in a forked child that this process
kills GRACE seconds past the budget, should it be stuck where no signal handler runs (C code that
never returns to Python, such as an endless read).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from ctxmill.hooks import EVENTS
from ctxmill.shared_store import add_flag

# seconds; Claude Code's own hook timeout is 60 s
BUDGETS = {"SessionStart": 5.0, "UserPromptSubmit": 2.0, "PreToolUse": 2.0, "PreCompact": 45.0, "SessionEnd": 45.0,
           "Stop": 20.0}
GRACE = 2.0
"""Seconds past its budget a stuck handler is given before it is killed."""
MAX_INPUT_BYTES = 16 * 2**20
"""The largest hook input read from stdin (Claude Code sends a few KB)."""


class _OverBudget(Exception):
    pass


def register(subparsers) -> None:
    parser = subparsers.add_parser("hook", help="answer a Claude Code hook (reads hook JSON on stdin)")
    parser.add_argument("event", choices=EVENTS)
    add_flag(parser)
    parser.set_defaults(func=run)


def _alarm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise _OverBudget()


def _failed_open(event: str, reason: str) -> None:
    """One line on stderr, and the same in the log when the log can be written."""
    import logging

    line = f"ctxmill hook {event}: failed open: {reason}"[:1000].replace("\n", " ")
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    logging.getLogger("ctxmill.hook").warning("%s", line)


def _within(budget: float, work) -> None:
    """`work()`, interrupted by _OverBudget after `budget` seconds of Python code."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        work()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _read_event() -> dict:
    import json

    from ground.files import read_at_most

    data = read_at_most(sys.stdin.buffer, MAX_INPUT_BYTES, "hook input")
    event = json.loads(data.decode("utf-8", errors="replace") or "{}")
    if not isinstance(event, dict):
        raise ValueError("hook input is not a JSON object")
    return event


def answer(event_name: str) -> None:
    """Read the hook input, write the answer; SessionStart then consolidates memory when due
    (after the answer is written: it never delays injection). Each phase has the event's budget."""
    import json
    import logging

    logging.raiseExceptions = False  # a log that cannot be written must not print a traceback
    event: dict = {}

    def respond() -> None:
        nonlocal event
        event = _read_event()
        from ctxmill import hooks

        output = hooks.handle(event_name, event)
        if output is not None:
            sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def consolidate() -> None:
        from ctxmill import hooks

        hooks.after_session_start(event)

    for phase in ((respond, consolidate) if event_name == "SessionStart" else (respond,)):
        try:
            _within(BUDGETS[event_name], phase)
        except _OverBudget:
            _failed_open(event_name, f"over its {BUDGETS[event_name]:g} s budget")
            return
        except Exception as exc:  # noqa: BLE001 - a hook must never break the host
            _failed_open(event_name, f"{type(exc).__name__}: {exc}")
            return


def _supervise(child: int, event_name: str) -> None:
    """Wait for the child answering the hook; kill it GRACE seconds past its budget."""
    limit = BUDGETS[event_name] * (2 if event_name == "SessionStart" else 1) + GRACE
    try:
        _within(limit, lambda: os.waitpid(child, 0))
    except _OverBudget:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        sys.stderr.write(f"ctxmill hook {event_name}: failed open: still running {GRACE:g} s past its budget "
                         "(stuck where it cannot be interrupted); stopped\n")


def run(args: argparse.Namespace) -> int:
    if args.store:  # the handlers build their Settings deep inside; the flag stands for CTXMILL_STORE
        os.environ["CTXMILL_STORE"] = args.store
    if not hasattr(os, "fork"):
        answer(args.event)
        return 0
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        try:
            answer(args.event)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
    _supervise(child, args.event)
    return 0
