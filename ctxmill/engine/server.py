"""The engine server: HTTP on a private Unix socket, for plugins that must not start Python per turn.

Routes: `GET /health` -> `{ok, pid, version}`; `POST /opencode/transform` and
`POST /opencode/compacting` (JSON in and out; see `ctxmill.engine.opencode`). Must hold:
- one engine per socket: a second one started while the first answers exits at once (a file
  lock guards the bind; a socket file nobody answers on is stale and replaced);
- the socket lives in a folder of this user that is not a link and no one else can write to
  (ctxmill's own runtime folder is made 0700; one someone else created first is refused, see
  `private_socket_folder`), so no other user serves in its place; the lock file is never opened
  through a link; the plugin checks the same before it connects;
- the pipeline runs in one worker thread, in request order; the event loop only parses;
- a body over `MAX_BODY_BYTES` is answered 413, one nested past what the parser reads or not a
  JSON object 400, each with a one-line `{"error": ...}` and never a traceback (the plugin then
  sends the conversation unchanged: it applies only a 200's edits);
- it exits by itself after `idle_seconds` without a request, and on SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ctxmill.proxy_config import DEFAULT_MAX_BODY

log = logging.getLogger("ctxmill.engine")

IDLE_SECONDS = 3600.0
LOCK_SUFFIX = ".lock"
MAX_BODY_BYTES = DEFAULT_MAX_BODY
"""The largest transform or compacting body read: the proxy's default cap."""


class Refused(Exception):
    """A request answered with an error: args are (status, one-line message)."""


async def read_json_object(request, limit: int = MAX_BODY_BYTES) -> dict:
    """The body as a JSON object, read within `limit` bytes and parsed depth-bounded (orjson stops
    at 1,024 levels instead of recursing further). Refused with 413 or 400 otherwise."""
    import orjson

    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"body exceeds {limit:,} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"body exceeds {limit:,} bytes")
        chunks.append(chunk)
    try:
        payload = orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError as exc:
        raise Refused(400, "body is nested too deeply" if "depth" in str(exc) else "body is not JSON") from None
    if not isinstance(payload, dict):
        raise Refused(400, "body is not a JSON object")
    return payload


def default_socket() -> Path:
    """`$CTXMILL_ENGINE_SOCKET`, else `engine.sock` in `runtime_folder()` (the plugin computes
    the same path)."""
    env = os.environ.get("CTXMILL_ENGINE_SOCKET")
    return Path(env) if env else runtime_folder() / "engine.sock"


def runtime_folder() -> Path:
    """ctxmill's own folder for its socket: `ctxmill` in `$XDG_RUNTIME_DIR`, else
    `<tmp>/ctxmill-<uid>` (a place where another user may have created it first)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "ctxmill"
    return Path(os.environ.get("TMPDIR") or "/tmp") / f"ctxmill-{os.getuid()}"


def private_socket_folder(folder: Path) -> Path:
    """`folder`, created if missing, once it is fit to hold the socket: ours and not a link
    (`private_dir(runtime=True)`); `runtime_folder()` is then made exactly 0700, a folder the
    user named must not be writable by others (PermissionError: it is left as it is)."""
    import stat

    from ground.files import DIR_MODE, private_dir

    private_dir(folder, runtime=True)
    mode = stat.S_IMODE(os.lstat(folder).st_mode)
    if os.path.abspath(folder) == os.path.abspath(runtime_folder()):
        if mode != DIR_MODE:
            os.chmod(folder, DIR_MODE)
    elif mode & 0o022:
        raise PermissionError(errno.EPERM, f"refused: other users can write to it (mode {mode:o})", str(folder))
    return folder


def answers(path: Path, timeout: float = 1.0) -> bool:
    """Something accepts connections on the socket at `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(path))
            return True
        except OSError:
            return False


def create_app(engine, idle, max_body: int = MAX_BODY_BYTES):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from ctxmill import package_version
    from ground.jsonbytes import dumps

    __version__ = package_version()
    pool = ThreadPoolExecutor(1, thread_name_prefix="ctxmill-engine")

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "pid": os.getpid(), "version": __version__})

    def route(fn):
        async def handle(request: Request) -> Response:
            idle.touch()
            try:
                payload = await read_json_object(request, max_body)
            except Refused as exc:
                status, message = exc.args
                log.info("%s → %d: %s", request.url.path, status, message)
                return JSONResponse({"error": message}, status_code=status)
            result = await asyncio.get_running_loop().run_in_executor(pool, fn, payload)
            idle.touch()
            return Response(dumps(result), media_type="application/json")
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
    import compress.formats.opencode_live
    import compress.runner.pipeline  # noqa: F401
    import ctxmill.settings  # noqa: F401


def serve(path: Path, idle_seconds: float = IDLE_SECONDS, log_level: str = "warning") -> int:
    """Serve on `path` until idle or stopped; 0 also when another engine already serves there."""
    import fcntl

    import uvicorn

    from ctxmill.engine.opencode import OpenCodeEngine
    from ground.files import open_private

    private_socket_folder(path.parent)
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
