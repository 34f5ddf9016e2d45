"""The engine server: HTTP on a private Unix socket, for plugins that must not start Python per turn.

Routes: `GET /health` -> `{ok, pid, version}`; `POST /opencode/transform` and
`POST /opencode/compacting` (JSON in and out; see `ctxmill.engine.opencode`). Must hold:
- one engine per socket: a second one started while the first answers exits at once (a file
  lock guards the bind; a socket file nobody answers on is stale and replaced);
- the socket lives in a folder only its user can enter: 0700, owned by this user, not a link
  (a folder someone else created first is refused, see `ground.files.private_dir(runtime=True)`),
  so no other user reaches it or serves in its place; the lock file is never opened through a
  link; the plugin checks the same before it connects;
- the pipeline runs in one worker thread, in request order; the event loop only parses;
- it exits by itself after `idle_seconds` without a request, and on SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

log = logging.getLogger("ctxmill.engine")

IDLE_SECONDS = 3600.0
LOCK_SUFFIX = ".lock"


def default_socket() -> Path:
    """`$CTXMILL_ENGINE_SOCKET`, else `ctxmill/engine.sock` in `$XDG_RUNTIME_DIR`, else in
    `<tmp>/ctxmill-<uid>/` (the plugin computes the same path)."""
    env = os.environ.get("CTXMILL_ENGINE_SOCKET")
    if env:
        return Path(env)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "ctxmill" / "engine.sock"
    return Path(os.environ.get("TMPDIR") or "/tmp") / f"ctxmill-{os.getuid()}" / "engine.sock"


def answers(path: Path, timeout: float = 1.0) -> bool:
    """Something accepts connections on the socket at `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(path))
            return True
        except OSError:
            return False


def create_app(engine, idle):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from importlib.metadata import PackageNotFoundError, version

    try:
        __version__ = version("ctxmill")
    except PackageNotFoundError:
        __version__ = "dev"
    pool = ThreadPoolExecutor(1, thread_name_prefix="ctxmill-engine")

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "pid": os.getpid(), "version": __version__})

    def route(fn):
        async def handle(request: Request) -> JSONResponse:
            idle.touch()
            try:
                payload = await request.json()
            except ValueError:
                return JSONResponse({"error": "body is not JSON"}, status_code=400)
            if not isinstance(payload, dict):
                return JSONResponse({"error": "body is not a JSON object"}, status_code=400)
            result = await asyncio.get_running_loop().run_in_executor(pool, fn, payload)
            idle.touch()
            return JSONResponse(result)
        return handle

    @contextlib.asynccontextmanager
    async def lifespan(app):
        try:
            yield
        finally:
            pool.shutdown(wait=True)
            engine.close()

    return Starlette(routes=[Route("/health", health, methods=["GET"]),
                             Route("/opencode/transform", route(engine.transform), methods=["POST"]),
                             Route("/opencode/compacting", route(engine.compacting), methods=["POST"])],
                     lifespan=lifespan)


class Idle:
    def __init__(self) -> None:
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()

    def seconds(self) -> float:
        return time.monotonic() - self.last


def _preload() -> None:
    """Import what a transform needs before answering anything, so the first turn does not pay
    for it (the plugin waits for the engine's health, not for its first transform)."""
    import ccr.store  # noqa: F401
    import compress.formats.opencode_live  # noqa: F401
    import compress.pipeline  # noqa: F401
    import ctxmill.settings  # noqa: F401


def serve(path: Path, idle_seconds: float = IDLE_SECONDS, log_level: str = "warning") -> int:
    """Serve on `path` until idle or stopped; 0 also when another engine already serves there."""
    import fcntl

    import uvicorn

    from ctxmill.engine.opencode import OpenCodeEngine
    from ground.files import open_private, private_dir

    private_dir(path.parent, runtime=True)
    _preload()
    lock_path = path.with_name(path.name + LOCK_SUFFIX)
    with os.fdopen(open_private(lock_path, os.O_WRONLY), "wb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if answers(path):
            log.info("an engine already answers on %s", path)
            return 0
        path.unlink(missing_ok=True)  # stale: its engine is gone
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.listen(64)
    idle = Idle()
    app = create_app(OpenCodeEngine(), idle)
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on"))

    async def watch() -> None:
        while not server.should_exit:
            await asyncio.sleep(min(5.0, idle_seconds))
            if idle.seconds() >= idle_seconds:
                log.info("engine idle for %.0f s: stopping", idle.seconds())
                server.should_exit = True

    async def main() -> None:
        watcher = asyncio.ensure_future(watch())
        try:
            await server.serve(sockets=[sock])
        finally:
            watcher.cancel()

    try:
        asyncio.run(main())
    finally:
        sock.close()
        with contextlib.suppress(OSError), os.fdopen(open_private(lock_path, os.O_WRONLY), "wb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not answers(path, 0.2):  # never another engine's socket
                path.unlink()
    return 0
