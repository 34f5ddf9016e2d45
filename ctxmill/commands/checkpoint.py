"""`ctxmill checkpoint [SESSION_FILE] [--session-id ID] [--format F]`: write a checkpoint now.

Without SESSION_FILE it uses the live session the Claude Code hooks recorded. Prints where it
wrote and what it offered to memory.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("checkpoint", help="summarize a session into .ctxmill/checkpoint.md")
    parser.add_argument("session", nargs="?", type=Path, help="session file (default: the live Claude Code session)")
    parser.add_argument("--session-id", help="id for sessions/<id>/ (default: the host's id or the file name)")
    parser.add_argument("--format", help="session format (default: detected)")
    parser.add_argument("--no-offer", action="store_true", help="do not offer decisions/constraints to notes.md")
    parser.add_argument("--print", dest="show", action="store_true", help="print the checkpoint")
    parser.set_defaults(func=run)


def run_checkpoint(session: Path | None, session_id: str | None = None, fmt: str | None = None, offer: bool = True):
    """Checkpoint `session` or the recorded live session; CliError when there is none or it is unreadable."""
    from compress.formats.sessions import UnknownFormat
    from ctxmill.errors import CliError
    from ctxmill.hooks import current_session
    from ctxmill.paths import ensure_gitignore, project_home
    from ctxmill.settings import Settings
    from memory.checkpoint import checkpoint_file

    home = project_home()
    if session is None:
        live = current_session(home)
        if live is None:
            raise CliError("no live session recorded (install the hooks: `ctxmill install claude-code`) "
                           "- pass a session file")
        session, session_id = Path(live["transcript_path"]), session_id or live.get("session_id")
    ensure_gitignore(home)
    try:
        return checkpoint_file(Settings.load(home).checkpoint, session, session_id, fmt, offer)
    except UnknownFormat as exc:
        raise CliError(f"{session}: {exc}") from None
    except OSError as exc:
        raise CliError(f"{exc.filename or session}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    result = run_checkpoint(args.session, args.session_id, args.format, not args.no_offer)
    if args.show:
        print(result.markdown)
    for path in result.paths:
        print(f"wrote {path}")
    print(f"{len(result.ccr_keys)} CCR keys, {len(result.offered)} entries offered to notes.md")
    return 0
