"""`ctxmill hook EVENT`: answer one Claude Code hook (JSON on stdin, JSON on stdout; see ctxmill.hooks).

Fails open, always: bad input, an unusable project home (a file, a read-only disk), any error, or
running past the event's time budget gives exit 0, no output and one line on stderr (also written
to the project log, `.ctxmill/ctxmill.log`, when it can be). The budget is kept twice: SIGALRM
interrupts the handler's Python code, and the handler runs in a forked child that this process
kills GRACE seconds past the budget, should it be stuck where no signal handler runs (C code that
never returns to Python, such as an endless read). SessionStart, UserPromptSubmit and PreToolUse
also start the always-on proxy when it is set up and down (`ctxmill.always_on`), alongside.
SessionStart consolidates memory after its answer, in a detached process, when it is due (at
most once an hour per project: `ctxmill.hooks.consolidation_due`): the hook ends (and the host
goes on) without waiting for it.
"""

from __future__ import annotations

import os
import signal
import sys

from ctxmill.hooks import EVENTS

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a hook's process does not import typing for this
if TYPE_CHECKING:
    import argparse

# seconds; Claude Code's own hook timeout is 60 s
BUDGETS = {"SessionStart": 5.0, "UserPromptSubmit": 2.0, "PreToolUse": 2.0, "PreCompact": 45.0, "SessionEnd": 45.0,
           "Stop": 20.0}
PROXY_WAIT = {"SessionStart": 20.0, "UserPromptSubmit": 1.5, "PreToolUse": 1.5}
"""Seconds a hook waits for the always-on proxy it (re)starts to answer (`ctxmill.always_on`): the
proxy starts in 1-3 s (2.8 s on a loaded 2-core machine); SessionStart leaves room for a busier
one, since the session's first request follows it at once (a prompt's or a tool's requests are
retried by the client)."""
STOPPING = ("UserPromptSubmit", "PreToolUse")
"""The events whose answer can keep Claude Code's next request from a port another user holds."""
QUICK = ("SessionStart", "UserPromptSubmit", "PreToolUse")
"""The events the host waits for at every session, prompt or tool call: their process sets up
logging only when it logs (`ground.lazy_log`), since `logging` alone costs it ~6 ms, and runs
without the cyclic garbage collector (its passes over the objects imports create cost 3-4 ms;
the process ends within seconds, and its detached consolidation turns it back on)."""
GRACE = 2.0
"""Seconds past its budget a stuck handler is given before it is killed."""
MAX_INPUT_BYTES = 16 * 2**20
"""The largest hook input read from stdin (Claude Code sends a few KB)."""


class _OverBudget(Exception):
    pass


def register(subparsers) -> None:
    from ctxmill.shared_store import add_flag

    parser = subparsers.add_parser("hook", help="answer a Claude Code hook (reads hook JSON on stdin)")
    parser.add_argument("event", choices=EVENTS)
    add_flag(parser)
    parser.set_defaults(func=run, logs=False)  # `run` sets logging up (`_set_up_logging`)


def _alarm(signum, frame):  # signal handler signature
    raise _OverBudget()


def _failed_open(event: str, reason: str) -> None:
    """One line on stderr, and the same in the log when the log can be written."""
    from ground.lazy_log import warning

    line = f"ctxmill hook {event}: failed open: {reason}"[:1000].replace("\n", " ")
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    warning("ctxmill.hook", "%s", line)


def _set_up_logging() -> None:
    """The project log (`ctxmill.logs`), and no traceback when it cannot be written."""
    import logging

    from ctxmill.logs import configure_logging

    logging.raiseExceptions = False
    configure_logging()


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
    """Read the hook input, write the answer; SessionStart then consolidates memory when due, in
    a detached process (`_detached`), so the host, which waits for this process to end, is
    answered first. Each phase has the event's budget."""
    import json

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
        import gc

        from ctxmill import hooks
        from ground.lazy_log import set_up

        gc.enable()  # consolidation may build much: collected as in any process
        set_up()  # the engines it runs log through `logging` directly
        hooks.after_session_start(event)

    blocked = _foreign_proxy(event_name)
    if blocked is not None:
        sys.stdout.write(json.dumps(blocked) + "\n")
        sys.stdout.flush()
        return
    proxy = _start_proxy(event_name)
    try:
        if _phase(event_name, respond) and event_name == "SessionStart" and _consolidation_due(event):
            _detached(lambda: _phase(event_name, consolidate))
    finally:
        if proxy is not None:
            proxy.join(PROXY_WAIT[event_name] + 1)


def _consolidation_due(event: dict) -> bool:
    """`hooks.consolidation_due`, False (fail open: no consolidation) when it cannot tell."""
    from ctxmill import hooks

    try:
        return hooks.consolidation_due(event)
    except Exception:  # noqa: BLE001 - a hook must never break the host
        return False


def _phase(event_name: str, work) -> bool:
    """`work()` within the event's budget; False (and one line on stderr and in the log) when it
    failed or ran past it."""
    try:
        _within(BUDGETS[event_name], work)
        return True
    except _OverBudget:
        _failed_open(event_name, f"over its {BUDGETS[event_name]:g} s budget")
    except Exception as exc:  # noqa: BLE001 - a hook must never break the host
        _failed_open(event_name, f"{type(exc).__name__}: {exc}")
    return False


def _detached(work) -> None:
    """`work()` in a process of its own that outlives this one: forked twice (so nothing waits
    for it), in a session of its own, with stdin, stdout and stderr on /dev/null (the host waits
    until the hook's pipes close), at low CPU priority, and killed GRACE seconds past the
    consolidation budget even where no signal handler runs (faulthandler's watchdog thread).
    Where there is no fork, `work()` runs here."""
    if not hasattr(os, "fork"):
        work()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child:
        os.waitpid(child, 0)  # the middle process ends at once
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        import faulthandler

        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.nice(10)  # background work: the host's next request and the hook's own exit go first
        faulthandler.dump_traceback_later(BUDGETS["SessionStart"] + GRACE, exit=True, file=open(os.devnull, "w"))
        work()
    finally:
        os._exit(0)


def _foreign_proxy(event_name: str) -> dict | None:
    """The answer that stops Claude Code before its next request when the always-on port may not
    receive it (another user's program listens there: `ctxmill.channel`); None: go on.
    UserPromptSubmit blocks the prompt (the session's first request waits for it); PreToolUse
    stops the session (`continue: false`), since the request after the tool would go there.
    SessionStart cannot stop a session (Claude Code ignores `continue` there)."""
    if event_name not in STOPPING:
        return None
    from ctxmill import always_on
    from ctxmill.paths import global_home

    try:
        state = always_on.read_state(global_home())
        if state is None:  # always-on is off: no socket to look at
            return None
        from ctxmill import channel

        reason = channel.problem(state["port"])
    except Exception:  # noqa: BLE001 - fail open
        return None
    if not reason:
        return None
    line = f"ctxmill: {reason}"
    return {"decision": "block", "reason": line} if event_name == "UserPromptSubmit" else \
        {"continue": False, "stopReason": line}


def _start_proxy(event_name: str):
    """A thread making the always-on proxy answer while the hook does its own work (the session's
    first request waits for SessionStart, a prompt's for UserPromptSubmit, and PreToolUse revives
    a proxy that stopped mid-turn before the next request): None for other events, or when
    always-on is off. A proxy still starting when the wait is over keeps starting."""
    if event_name not in PROXY_WAIT:
        return None
    from ctxmill import always_on
    from ctxmill.paths import global_home

    home = global_home()
    if always_on.read_state(home) is None:
        return None
    import threading

    def ensure() -> None:
        problem = always_on.ensure(home, PROXY_WAIT[event_name])
        if problem:
            _failed_open(event_name, f"always-on proxy: {problem}")

    thread = threading.Thread(target=ensure, daemon=True)
    thread.start()
    return thread


def _supervise(child: int, event_name: str) -> None:
    """Wait for the child answering the hook; kill it GRACE seconds past its budget."""
    limit = max(BUDGETS[event_name], PROXY_WAIT.get(event_name, 0)) + GRACE
    try:
        _within(limit, lambda: os.waitpid(child, 0))
    except _OverBudget:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        sys.stderr.write(f"ctxmill hook {event_name}: failed open: still running {GRACE:g} s past its budget "
                         "(stuck where it cannot be interrupted); stopped\n")


def run(args: argparse.Namespace) -> int:
    if args.event in QUICK:
        import gc

        from ground.lazy_log import on_first_warning

        gc.disable()  # a process that ends within its budget: no cyclic collections over its imports
        on_first_warning(_set_up_logging)
    else:
        _set_up_logging()
    if getattr(args, "store", None):  # the handlers build their Settings deep inside; the flag stands for CTXMILL_STORE
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
