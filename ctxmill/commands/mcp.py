"""`ctxmill mcp`: run the ctxmill MCP server on stdio (see ctxmill.mcp_server); it starts the always-on
proxy first when that is set up and down (ctxmill.always_on)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ctxmill.shared_store import add_flag

TOOLS = ("deep_expand", "memory_search", "memory_store", "memory_forget", "checkpoint",
         "history_search", "history_get")
"""The server's tools (`ctxmill.mcp_server.build_server`), named here so help needs no MCP SDK."""


def register(subparsers) -> None:
    tools = ", ".join(TOOLS)
    parser = subparsers.add_parser("mcp", help=f"run the MCP server on stdio ({tools})",
                                   description=f"Serve ctxmill's MCP tools on stdio: {tools}.")
    parser.add_argument("--home", type=Path, metavar="DIR", help="ctxmill home (default: the project's .ctxmill)")
    add_flag(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve; first make the always-on proxy answer when it is set up (`ctxmill.always_on`):
    Codex starts this server with every session, before its first model request."""
    import logging

    from ctxmill import always_on
    from ctxmill.mcp_server import serve
    from ctxmill.paths import global_home
    from ctxmill.settings import Settings

    problem = always_on.ensure(global_home())
    if problem:
        logging.getLogger("ctxmill.mcp").warning("always-on proxy: %s", problem)
    serve(Settings.load(args.home, store=args.store))
    return 0
