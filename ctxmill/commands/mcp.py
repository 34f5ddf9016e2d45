"""`ctxmill mcp`: run the ctxmill MCP server on stdio (see ctxmill.mcp_server)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ctxmill.shared_store import add_flag


def register(subparsers) -> None:
    parser = subparsers.add_parser("mcp", help="run the MCP server on stdio (deep_expand, memory_*, checkpoint)")
    parser.add_argument("--home", type=Path, metavar="DIR", help="ctxmill home (default: the project's .ctxmill)")
    add_flag(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ctxmill.mcp_server import serve
    from ctxmill.settings import Settings

    serve(Settings.load(args.home, store=args.store))
    return 0
