"""`ctxmill hook EVENT`: answer one Claude Code hook (JSON on stdin, JSON on stdout; see ctxmill.hooks).

Fails open: bad input, any error, or running past the event's time budget gives exit 0 and no
output, with the reason in the project log (`.ctxmill/ctxmill.log`).
"""

from __future__ import annotations

import argparse
import sys

from ctxmill.hooks import EVENTS

# seconds; Claude Code's own hook timeout is 60 s
BUDGETS = {"SessionStart": 5.0, "UserPromptSubmit": 2.0, "PreToolUse": 2.0, "PreCompact": 45.0, "SessionEnd": 45.0,
           "Stop": 20.0}


class _OverBudget(Exception):
    pass


def register(subparsers) -> None:
    parser = subparsers.add_parser("hook", help="answer a Claude Code hook (reads hook JSON on stdin)")
    parser.add_argument("event", choices=EVENTS)
    parser.set_defaults(func=run)


def _alarm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise _OverBudget()


def _log(event: str, reason: str) -> None:
    import logging

    logging.getLogger("ctxmill.hook").warning("hook %s failed open: %s", event, reason)


def run(args: argparse.Namespace) -> int:
    import json
    import signal

    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, BUDGETS[args.event])
    try:
        event = json.loads(sys.stdin.read() or "{}")
        if not isinstance(event, dict):
            raise ValueError("hook input is not a JSON object")
        from ctxmill import hooks

        output = hooks.handle(args.event, event)
        signal.setitimer(signal.ITIMER_REAL, 0)
        if output is not None:
            sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        if args.event == "SessionStart":
            signal.setitimer(signal.ITIMER_REAL, BUDGETS[args.event])
            hooks.after_session_start(event)
    except _OverBudget:
        _log(args.event, f"over its {BUDGETS[args.event]:g} s budget")
    except Exception as exc:  # noqa: BLE001 - a hook must never break the host
        _log(args.event, f"{type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return 0
