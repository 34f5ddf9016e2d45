"""`ctxmill expand KEY [--lines A:B] [--grep PATTERN] [--home DIR]`: print a CCR original.

Looks in the user's CCR store (every face writes there, from any project), then in the
project's own (`--home`, default the project's .ctxmill). Exit 0 with the text on stdout; exit 1
with one line on stderr when the key is unknown, expired or nothing matches; exit 2 for a
malformed key, line range or pattern.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ctxmill.shared_store import add_flag


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "expand",
        help='print the original text behind a deep_expand("KEY") marker',
        description='Print the original text behind a [ctxmill: … · deep_expand("KEY")] marker.',
    )
    parser.add_argument("key", metavar="KEY", help="the 32-hex key inside deep_expand(\"…\")")
    parser.add_argument("--lines", metavar="A:B", help='only lines A..B, 1-based inclusive ("120:180", "120:", ":50")')
    parser.add_argument("--grep", metavar="PATTERN", help="only lines matching this regex")
    parser.add_argument("--home", type=Path, metavar="DIR",
                        help="ctxmill home whose own store is also searched (default: the project's .ctxmill)")
    add_flag(parser)
    parser.set_defaults(func=run)


def _write_stdout(text: str) -> None:
    """Write the exact original; lone surrogates from undecodable bytes go back as bytes."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "replace")
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    from ccr.expand import expand_first
    from ccr.keys import is_valid_key
    from ccr.store import CCRError, invalid_key_message
    from ctxmill.errors import CliError
    from ctxmill.settings import Settings

    if not is_valid_key(args.key):
        raise CliError(invalid_key_message(args.key).removeprefix("ctxmill: "))
    settings = Settings.load(Path(args.home) if args.home else None, store=args.store)
    try:
        result = expand_first(settings.ccr_read_dirs, args.key, lines=args.lines, grep=args.grep,
                              retention=settings.ccr, shared=settings.store)
    except CCRError as exc:
        print(f"ctxmill: {exc}", file=sys.stderr)
        return 1
    if result.status == "bad_request":
        raise CliError(result.message.removeprefix("ctxmill: "))
    if not result.ok:
        print(result.message, file=sys.stderr)
        return 1
    _write_stdout(result.text or "")
    from ctxmill.ledger import project_of, record_expansion
    from ctxmill.paths import ledger_file, project_root

    record_expansion(face="cli", chars=len(result.text or ""), project=project_of(project_root()),
                     path=ledger_file(settings.global_home))
    return 0
