"""`ctxmill compress REQUEST.json [-o OUT] [--session DIR] [--json] [--at WHEN]`.

Reads an Anthropic Messages or OpenAI Chat Completions request body, runs the per-turn
transform and writes the compressed body (same shape, unknown fields untouched). Prints a
one-line summary on stderr (`--json`: the report as JSON on stderr). When the run cannot finish
(a full disk, a CCR store that cannot be opened) the request is written unchanged, one line on
stderr says why, and the exit code is non-zero.

The session takes the request as sent now; `--at` says when it was sent instead (replaying a
recorded session: after a pause longer than the provider's cache lifetime, an epoch re-decides
old messages for free, since the provider writes the whole request again anyway).

Each run is added to the savings ledger once per request: the same body compressed again in the
same session (a retried script, a second look) is not counted again (`_first_time`: the last
`RECORDED_KEEP` requests' digests, kept in the user's cache folder).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compress", help="compress one request body (Anthropic or OpenAI)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("request", help="request JSON file, or - for stdin")
    p.add_argument("-o", "--output", help="where to write the compressed body (default: stdout)")
    p.add_argument("--session", help="session directory: keeps output stable across turns "
                                     "(default: a fresh in-memory session)")
    p.add_argument("--home", help="ctxmill home for the CCR store (default: the project's .ctxmill)")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of one line")
    p.add_argument("--input-tokens", type=int, metavar="N",
                   help="the provider-reported input tokens of this request, used for the tier")
    p.add_argument("--at", metavar="WHEN", type=sent_at,
                   help="when the request was sent: ISO 8601 (2026-06-14T12:06:25Z) or seconds since "
                        "the epoch (default: now)")
    p.set_defaults(func=run)


def sent_at(text: str) -> float:
    """`--at`'s value in seconds since the epoch; a clear argparse error when it is not a time."""
    import math

    from ground.times import iso_seconds

    seconds: float | None
    try:
        seconds = float(text)
    except ValueError:
        seconds = iso_seconds(text)
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (ISO 8601, or seconds since the epoch)")
    return seconds


RECORDED_KEEP = 1000
"""How many recorded requests' digests are remembered to count each request once."""
MAX_REQUEST_BYTES = 2**30
"""The largest request body read (a regular file or stdin)."""


def read_request(source: str) -> object:
    """The parsed body, or CliError with a one-line reason (a pipe, a device or a folder is
    refused unread, stdin is read up to MAX_REQUEST_BYTES)."""
    import orjson

    from ctxmill.errors import CliError
    from ground.files import read_at_most, read_regular
    from ground.jsonbytes import InexactNumber, loads

    try:
        if source == "-":
            data = read_at_most(sys.stdin.buffer, MAX_REQUEST_BYTES, "stdin")
        else:
            data = read_regular(source, MAX_REQUEST_BYTES)
    except OSError as exc:
        raise CliError(f"cannot read {source}: {exc.strerror or exc}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"{source} is not valid UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})") from None
    try:
        return loads(data)
    except InexactNumber as exc:
        raise CliError(f"{source} holds {exc}; ctxmill leaves such a request alone") from None
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc):
            raise CliError(f"{source}: JSON nested too deeply to process") from None
        raise CliError(f"{source} is not valid JSON: {exc}") from None


def run(args: argparse.Namespace) -> int:
    import contextlib

    from ccr.store import CCRError
    from compress.formats.requests import InvalidRequest, detect
    from compress.runner.pipeline import run as run_pipeline
    from compress.state.session import Session
    from ctxmill.errors import CliError
    from ctxmill.settings import Settings
    from ground.jsonbytes import dumps

    body = read_request(args.request)
    try:
        provider = detect(body)
    except InvalidRequest as exc:
        raise CliError(f"{args.request}: {exc}") from None

    def write(out: object) -> None:
        data = dumps(out) + b"\n"
        if not args.output:
            sys.stdout.buffer.write(data)
            return
        try:
            Path(args.output).write_bytes(data)
        except OSError:  # a full disk: no truncated body left behind for a correct-looking file
            Path(args.output).unlink(missing_ok=True)
            raise

    settings = Settings.load(Path(args.home) if args.home else None)
    config = settings.compress
    with contextlib.ExitStack() as stack:  # a failure past the read still writes a correct body: the input
        try:
            store = stack.enter_context(settings.open_ccr())
        except CCRError as exc:
            write(body)
            raise CliError(f"{exc} (request written unchanged)") from None
        session = stack.enter_context(Session.open(Path(args.session))) if args.session else Session.memory()
        result = run_pipeline(body, session=session, store=store, config=config,
                              reported_input_tokens=args.input_tokens,
                              now=time.time() if args.at is None else args.at)
        write(result.body)  # the input itself when the run failed
        if result.report.error:
            raise CliError(f"{args.request}: {result.report.error} (request written unchanged)")
    _record(settings, args, body, provider, result.report)
    if args.json:
        import orjson

        sys.stderr.write(orjson.dumps(result.report.to_dict()).decode() + "\n")
    else:
        sys.stderr.write(f"ctxmill: {result.report.summary_line()}\n")
    return 0


def _record(settings, args: argparse.Namespace, body: object, provider: str, report) -> None:
    """Add the run to the savings ledger (session: the --session folder's name, else "cli"),
    unless this session's same request was recorded already."""
    from compress.formats.requests import SHAPES
    from ctxmill.ledger import project_of, record_request
    from ctxmill.paths import ledger_file, project_root

    session = Path(args.session).name if args.session else "cli"
    if not _first_time(settings.global_home / "cache", session, body):
        return
    model = body.get("model") if isinstance(body, dict) else None
    record_request(face="cli", session=session,
                   project=project_of(project_root()), model=model if isinstance(model, str) else "",
                   vendor=SHAPES[provider].VENDOR, tokens_before=report.tokens_before,
                   tokens_after=report.tokens_after, stages=report.stages_saved, path=ledger_file(settings.global_home))


def _first_time(folder: Path, session: str, body: object) -> bool:
    """Whether `session`'s request `body` is not among the requests recorded lately; it is
    remembered from now on. Fails open (True) when the record cannot be kept."""
    import xxhash
    from filelock import Timeout

    from ground.files import atomic_write, private_lock
    from ground.jsonbytes import dumps

    key = session.encode("utf-8", "surrogateescape") + b"\0" + dumps(body)
    digest = xxhash.xxh3_128_hexdigest(key)
    record = folder / "compress-recorded"
    try:
        with private_lock(folder / "compress-recorded.lock", timeout=5):
            try:
                seen = record.read_text(encoding="ascii").split()
            except (OSError, UnicodeDecodeError):
                seen = []
            if digest in seen:
                return False
            kept = [*seen[-(RECORDED_KEEP - 1):], digest]
            atomic_write(record, "\n".join(kept).encode(), fsync=False)
    except (OSError, Timeout):
        return True
    return True
