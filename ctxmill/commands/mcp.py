"""`ctxmill mcp`: run the ctxmill MCP server on stdio (see ctxmill.mcp_server); it starts the always-on
proxy first when that is set up and down (ctxmill.always_on).

Codex sends its first model request right after its MCP servers start, and no hook of its own
runs before it; install marks this server `required`, so Codex waits for it and does not start a
session it could not start. What must hold: when the always-on port is held by a program that
may not receive the user's requests (another user's: `ctxmill.channel`), the server answers the
client's first message with a JSON-RPC error whose message says so in one line, and exits 1:
Codex stops the session and shows that line, and no request leaves. Any other problem of the
proxy is logged and the server serves (the keeper answers the client's requests with it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ctxmill.mcp_tools import TOOLS
from ctxmill.shared_store import add_flag

REFUSAL_CODE = -32000
FIRST_MESSAGE_LIMIT = 2**20
"""Bytes of the client's first message read before answering it with the refusal."""


def register(subparsers) -> None:
    tools = ", ".join(TOOLS)
    parser = subparsers.add_parser("mcp", help=f"run the MCP server on stdio ({tools})",
                                   description=f"Serve ctxmill's MCP tools on stdio: {tools}.")
    parser.add_argument("--home", type=Path, metavar="DIR", help="ctxmill home (default: the project's .ctxmill)")
    add_flag(parser)
    parser.set_defaults(func=run)


def refuse(reason: str, stdin=None, stdout=None) -> int:
    """Answer the client's first JSON-RPC message (its `initialize`) with `reason` as the error,
    say it on stderr too, and give the exit code (1)."""
    stdin, stdout = stdin or sys.stdin.buffer, stdout or sys.stdout.buffer
    line = f"ctxmill: {reason}; this session is stopped before it sends anything"
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    try:
        first = json.loads(stdin.readline(FIRST_MESSAGE_LIMIT) or b"{}")
    except ValueError:
        first = {}
    ident = first.get("id") if isinstance(first, dict) else None
    error = {"jsonrpc": "2.0", "id": ident, "error": {"code": REFUSAL_CODE, "message": line}}
    stdout.write(json.dumps(error).encode() + b"\n")
    stdout.flush()
    return 1


def run(args: argparse.Namespace) -> int:
    """Serve; first make the always-on proxy answer when it is set up (`ctxmill.always_on`), and
    refuse the session when its port may not receive the user's requests (see the module)."""
    import logging

    from ctxmill import always_on, channel
    from ctxmill.mcp_server import serve
    from ctxmill.paths import global_home
    from ctxmill.settings import Settings

    home = global_home()
    problem = always_on.ensure(home)
    state = always_on.read_state(home) if problem else None
    if state is not None and (foreign := channel.problem(state["port"])):
        return refuse(foreign)
    if problem:
        logging.getLogger("ctxmill.mcp").warning("always-on proxy: %s", problem)
    serve(Settings.load(args.home, store=args.store))
    return 0
