"""`ctxmill dashboard [--port N] [--no-browser]`: serve the savings dashboard on 127.0.0.1.

The page shows what the savings ledger holds (the figures of `ctxmill stats`) as charts, and
browses the project's memory (search, pin, forget, the last checkpoint). It binds to loopback
only; pin and forget are refused unless they come from the page itself. The proxy serves the
same page at http://127.0.0.1:8787/ctxmill/. Stop with Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys

DEFAULT_PORT = 8788
HOST = "127.0.0.1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dashboard", help="serve the savings dashboard in your browser",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free one)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import socket

    import uvicorn

    from ctxmill.dashboard.app import create_app
    from ctxmill.errors import CliError
    from ctxmill.paths import ledger_file
    from ctxmill.settings import Settings

    if not 0 <= args.port < 65536:
        raise CliError(f"--port must be 0..65535, got {args.port}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, args.port))
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {HOST}:{args.port}: {exc.strerror or exc} (try --port N)") from None
    settings = Settings.load()
    app = create_app(lambda: ledger_file(settings.global_home), lambda: settings)
    url = f"http://{HOST}:{sock.getsockname()[1]}/"
    print(f"ctxmill dashboard on {url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    if not args.no_browser:
        import webbrowser

        webbrowser.open(url)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    server.run(sockets=[sock])
    return 0
