"""`ctxmill engine [--socket PATH] [--idle-minutes N]`: serve the engine for host plugins (see ctxmill.engine).

The OpenCode plugin starts it on demand and reuses it; it stops after N minutes without a request.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("engine", help="serve the pipeline to host plugins on a private Unix socket")
    parser.add_argument("--socket", type=Path, metavar="PATH",
                        help="socket path (default $CTXMILL_ENGINE_SOCKET, else $XDG_RUNTIME_DIR/ctxmill/engine.sock)")
    parser.add_argument("--idle-minutes", type=float, default=60.0, help="stop after this long without a request")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ctxmill.engine.server import default_socket, serve
    from ctxmill.errors import CliError

    if args.idle_minutes <= 0:
        raise CliError("--idle-minutes must be positive")
    return serve(args.socket or default_socket(), args.idle_minutes * 60, args.log_level)
