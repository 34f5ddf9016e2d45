"""`ctxmill proxy [--port 8787] [--host 127.0.0.1] [--upstream-anthropic URL] [--upstream-openai URL]`.

Serves the API proxy: point a client at it with ANTHROPIC_BASE_URL=http://127.0.0.1:8787 or
OPENAI_BASE_URL=http://127.0.0.1:8787/v1 and every request passes through the per-turn
transform. `ctxmill proxy --stats [--json]` prints the per-session stats of a running proxy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ctxmill.config_tables import parse_budget
from ctxmill.proxy_config import (
    ANTHROPIC_API,
    DEFAULT_IDLE_SECONDS,
    DEFAULT_LATENCY_BUDGET_MS,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_PORT,
    OPENAI_API,
    ProxyConfig,
)
from ctxmill.settings import Settings
from ctxmill.shared_store import add_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("proxy", help="serve the compressing API proxy (Anthropic and OpenAI)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback --host (the proxy forwards your API keys: think twice)")
    p.add_argument("--upstream-anthropic", metavar="URL",
                   help=f"Anthropic API origin (default [proxy] upstream_anthropic in config.toml, else {ANTHROPIC_API})")
    p.add_argument("--upstream-openai", metavar="URL",
                   help="OpenAI API origin; the request path (/v1/…) is appended (default [proxy] upstream_openai in "
                        f"config.toml, else {OPENAI_API})")
    p.add_argument("--home", type=Path, metavar="DIR",
                   help="ctxmill home for sessions and CCR (default: the project's .ctxmill)")
    p.add_argument("--max-body-mb", type=float, default=DEFAULT_MAX_BODY / 2**20, metavar="MB",
                   help="largest request body accepted (default %(default)g MB)")
    p.add_argument("--max-inflight-mb", type=float, metavar="MB",
                   help="request bodies held at once, in total; a body that does not fit waits for room, then gets 503 "
                        f"(default {DEFAULT_MAX_INFLIGHT // 2**20}, or [proxy] max_inflight_mb in config.toml)")
    p.add_argument("--max-connections", type=int, metavar="N",
                   help="client connections open at once; beyond it the longest idle one is closed "
                        f"(default {DEFAULT_MAX_CONNECTIONS}, or [proxy] max_connections in config.toml)")
    p.add_argument("--latency-budget-ms", metavar="MS",
                   help="longest wait for a request's compression before the original is sent and the run "
                        f"finishes in the background; \"none\": always wait (default {DEFAULT_LATENCY_BUDGET_MS:g},"
                        " or [proxy] latency_budget_ms in config.toml)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="pipeline worker processes (default min(2, CPUs), or [proxy] workers in config.toml)")
    add_flag(p)
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-file", type=Path, metavar="FILE",
                   help="append the proxy's log to FILE as well (it always goes to stderr)")
    p.add_argument("--stats", action="store_true", help="print the stats of the proxy running on --host/--port")
    p.add_argument("--json", action="store_true", help="with --stats: print the raw JSON")
    p.add_argument("--ensure", action="store_true",
                   help="start the always-on proxy (see `ctxmill install`) unless it is running; print its URL")
    p.add_argument("--stop", action="store_true",
                   help="stop the ctxmill proxy on --port (default: the always-on proxy's port)")
    p.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)  # the keeper's socket (ctxmill.keeper)
    p.set_defaults(func=run, logs=False)  # the proxy logs to stderr (and --log-file): ctxmill.logs


def _check_upstream(url: str, flag: str, host: str, port: int) -> str:
    from urllib.parse import urlsplit

    from ctxmill.errors import CliError
    from ctxmill.proxy.server import is_loopback

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(f"{flag} must be an http(s) URL, got {url!r}")
    default = 443 if parts.scheme == "https" else 80
    if (parts.port or default) == port and is_loopback(parts.hostname) and is_loopback(host):
        raise CliError(f"{flag} {url} points at the proxy itself (port {port})")
    return url


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def fetch_stats(host: str, port: int) -> dict:
    import httpx

    from ctxmill.errors import CliError

    url = f"{base_url(host, port)}/ctxmill/stats"
    try:
        response = httpx.get(url, timeout=5, trust_env=False)
        response.raise_for_status()
        return response.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise CliError(f"no ctxmill proxy answering at {url} ({type(exc).__name__})") from None


def format_stats(data: dict) -> str:
    header = f"{'session':<14}{'provider':<18}{'requests':>9}{'before':>12}{'after':>12}{'saved':>11}" \
             f"{'cache read':>12}{'cache write':>12}{'failures':>9}{'deferred':>9}"
    rows = [header]
    for s in data.get("sessions", []) + [{"session": "total", "provider": "", **data.get("totals", {})}]:
        rows.append(f"{s['session'][:12]:<14}{s.get('provider', ''):<18}{s['requests']:>9,}"
                    f"{s['tokens_before']:>12,}{s['tokens_after']:>12,}{s['saved']:>11,}"
                    f"{s['cache_read_tokens']:>12,}{s['cache_write_tokens']:>12,}{s['failures']:>9,}"
                    f"{s.get('deferred', 0):>9,}")
    totals = data.get("totals", {})
    if totals.get("requests"):
        rows.append(f"deferred past the latency budget: {totals.get('deferred', 0):,} of {totals['requests']:,} "
                    f"requests ({100 * totals.get('deferred_share', 0):.1f}%; "
                    f"{totals.get('deferred_behind', 0):,} because their worker was busy with other sessions' "
                    f"runs); records failing the shared store's "
                    f"integrity check: {totals.get('rejected_records', 0):,}")
    return "\n".join(rows)


def _proxy_settings(args: argparse.Namespace, settings: Settings) -> dict:
    """The upstreams, latency_budget_ms, workers, max_inflight_bytes and max_connections: the
    flags, else the [proxy] table of the user's own config (where `ctxmill install` keeps the
    gateway a client used; a project's config may not set it: `ctxmill.provenance`), else the
    provider's API and the defaults."""
    from ctxmill.errors import CliError

    overrides = dict(settings.proxy_overrides)
    overrides["upstream_anthropic"] = _check_upstream(
        args.upstream_anthropic or overrides.get("upstream_anthropic", ANTHROPIC_API), "--upstream-anthropic",
        args.host, args.port)
    overrides["upstream_openai"] = _check_upstream(
        args.upstream_openai or overrides.get("upstream_openai", OPENAI_API), "--upstream-openai", args.host, args.port)
    if args.latency_budget_ms is not None:
        try:
            overrides["latency_budget_ms"] = parse_budget(args.latency_budget_ms)
        except ValueError as exc:
            raise CliError(f"--latency-budget-ms {exc}") from None
    if args.workers is not None:
        if args.workers < 1:
            raise CliError("--workers must be at least 1")
        overrides["workers"] = args.workers
    if args.max_inflight_mb is not None:
        if args.max_inflight_mb <= 0:
            raise CliError("--max-inflight-mb must be positive")
        overrides["max_inflight_bytes"] = int(args.max_inflight_mb * 2**20)
    if args.max_connections is not None:
        if args.max_connections < 1:
            raise CliError("--max-connections must be at least 1")
        overrides["max_connections"] = args.max_connections
    return overrides


def _always_on(args: argparse.Namespace) -> int:
    from ctxmill import always_on
    from ctxmill.errors import CliError
    from ctxmill.paths import global_home

    state = always_on.read_state(global_home())
    if args.stop:
        port = args.port if args.port is not None else state["port"] if state else DEFAULT_PORT
        pid = always_on.stop(port, global_home())
        print(f"stopped the ctxmill proxy on {always_on.url(port)} (pid {pid})" if pid
              else f"no ctxmill proxy answers on {always_on.url(port)}")
        return 0
    if state is None:
        raise CliError("always-on compression is off: `ctxmill install claude-code` (or codex) turns it on")
    problem = always_on.ensure(global_home())
    if problem:
        raise CliError(problem)
    print(always_on.url(state["port"]))
    return 0


def run(args: argparse.Namespace) -> int:
    from ctxmill.errors import CliError
    from ctxmill.proxy.server import is_loopback

    if args.ensure or args.stop:
        return _always_on(args)
    args.port = DEFAULT_PORT if args.port is None else args.port
    if args.stats:
        data = fetch_stats(args.host, args.port)
        if args.json:
            import orjson

            sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            print(format_stats(data))
        return 0
    if not 0 < args.port < 65536:
        raise CliError(f"--port must be 1..65535, got {args.port}")
    if not is_loopback(args.host) and not args.allow_remote:
        raise CliError(f"--host {args.host} is not a loopback address; add --allow-remote to expose the proxy")
    if args.max_body_mb <= 0:
        raise CliError("--max-body-mb must be positive")

    from ctxmill.proxy.server import serve

    settings = Settings.load(args.home, store=args.store)
    store = settings.store  # ConfigError (one line) for a store without its key
    if store is not None:
        from ctxmill.shared_store import check

        if warning := check(store):  # ConfigError when the store can never work
            print(f"ctxmill proxy: {warning}", file=sys.stderr, flush=True)
    try:
        config = ProxyConfig(
            **_proxy_settings(args, settings),
            home=settings.home,
            ccr_dir=settings.ccr_dir,
            max_body_bytes=int(args.max_body_mb * 2**20),
            compress=settings.compress,
            ccr=settings.ccr,
            store=store,
            log_file=args.log_file,
            log_level=args.log_level,
            save_delay=_bench_seconds("CTXMILL_SAVE_DELAY_MS", 0.0, unit=1 / 1000),
            idle_seconds=_bench_seconds("CTXMILL_IDLE_SECONDS", DEFAULT_IDLE_SECONDS, least=1.0),
        )
    except ValueError as exc:  # the in-flight limit below --max-body-mb
        raise CliError(f"{exc}: raise --max-inflight-mb or lower --max-body-mb") from None
    sock = _inherited(args.listen_fd, args.host, args.port) if args.listen_fd is not None else \
        _listen(args.host, args.port)  # bound before the banner says the proxy is up
    print(f"ctxmill proxy on {base_url(args.host, args.port)} · ANTHROPIC_BASE_URL={base_url(args.host, args.port)}"
          f" · OPENAI_BASE_URL={base_url(args.host, args.port)}/v1", file=sys.stderr, flush=True)
    serve(config, sock, args.host, args.port, args.log_level)
    return 0


def _bench_seconds(name: str, default: float, unit: float = 1.0, least: float = 0.0) -> float:
    """Seconds from the environment variable `name` (a number of `unit` seconds; `default` when
    unset, invalid or below `least` seconds). For the benches' settings only, never a user's:
    CTXMILL_SAVE_DELAY_MS, how long workers pause between an answer and writing its state
    (bench/gateway.py forces the race between replicas with it), and CTXMILL_IDLE_SECONDS, how
    long a session with no run stays in its worker's memory (bench/proxy_steady.py reaches a
    steady gateway in minutes with it)."""
    import os

    try:
        value = float(os.environ[name]) * unit
    except (KeyError, ValueError):
        return default
    return value if value >= least else default


def _listen(host: str, port: int):
    """The bound socket, or one line saying why there is none (a taken port above all)."""
    import errno

    from ctxmill.errors import CliError
    from ctxmill.proxy.server import listen

    try:
        return listen(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise CliError(f"port {port} on {host} is taken: another program listens there (a proxy already "
                           f"running? `ctxmill proxy --stats --port {port}`); stop it or choose another --port") from None
        raise CliError(f"cannot listen on {base_url(host, port)}: {exc.strerror or exc}") from None


def _inherited(fd: int, host: str, port: int):
    """The listening socket the keeper handed over (ctxmill.keeper), checked to be host:port."""
    import socket

    from ctxmill.errors import CliError

    try:
        sock = socket.socket(fileno=fd)
        bound = sock.getsockname()[:2]
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    except OSError as exc:
        raise CliError(f"--listen-fd {fd}: not a socket ({exc.strerror or exc})") from None
    if not listening or bound != (host, port):
        raise CliError(f"--listen-fd {fd}: not a socket listening on {base_url(host, port)} ({bound[0]}:{bound[1]})")
    return sock

