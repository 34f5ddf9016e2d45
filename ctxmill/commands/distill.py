"""`ctxmill distill [--apply] [PATH…]`: skill candidates from command sequences that recur across
sessions (`memory.distill`), printed, or written with --apply as each client's skill files.

Sessions: the history store's sessions of this project (`--all-projects`: every project), or the
session files and folders given. Skills go to `<project>/.claude/skills/NAME/SKILL.md` (Claude
Code; OpenCode reads these too) or, with `--client opencode`, `<project>/.opencode/skills/`.
A file a person wrote (no ctxmill mark) is never replaced.
"""

from __future__ import annotations

import argparse
import sys

from ctxmill.errors import CliError

FOLDERS = {"claude-code": (".claude", "skills"), "opencode": (".opencode", "skills")}


def register(subparsers) -> None:
    parser = subparsers.add_parser("distill", help="skill candidates from command sequences that recur across sessions")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="session files or folders (default: history)")
    parser.add_argument("--apply", action="store_true", help="write the candidates as skill files")
    parser.add_argument("--only", action="append", metavar="NAME", help="with --apply: only this candidate (repeatable)")
    parser.add_argument("--client", choices=sorted(FOLDERS), action="append",
                        help="whose skill folder to write (default: claude-code; repeatable)")
    parser.add_argument("--all-projects", action="store_true", help="mine every project's sessions in history")
    parser.add_argument("--min-sessions", type=int, default=2, help="a sequence must recur in this many sessions")
    parser.add_argument("--limit", type=int, default=5, help="candidates at most")
    parser.set_defaults(func=run)


def _from_history(settings, project: str | None) -> dict:
    from memory.history.store import HistoryError, HistoryStore

    try:
        with HistoryStore.open(settings.history) as store:
            return store.steps(project)
    except HistoryError as exc:
        raise CliError(str(exc)) from None


def _from_files(settings, paths) -> dict:
    from pathlib import Path

    from compress.formats.sessions import UnknownFormat, read_session, session_files
    from memory.checkpoint import session_id_for
    from memory.distill import steps_of_rows
    from memory.history.messages import rows_of

    out, failures = {}, []
    for path in (f for p in map(Path, paths) for f in (session_files(p) if p.is_dir() else [p])):
        try:
            transcript = read_session(path)
        except (OSError, UnknownFormat) as exc:
            failures.append(f"{path}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}")
            continue
        cfg = settings.history
        out[session_id_for(path)] = steps_of_rows(rows_of(transcript, cfg.redact_extra, cfg.redact_allow))
    if failures and not out:
        raise CliError(failures[0] + (f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""))
    for failure in failures:
        print(f"ctxmill distill: {failure}", file=sys.stderr)
    return out


def run(args: argparse.Namespace) -> int:
    from ctxmill.paths import project_root
    from ctxmill.settings import Settings
    from memory import distill

    settings = Settings.load()
    root = project_root()
    sequences = (_from_files(settings, args.paths) if args.paths
                 else _from_history(settings, None if args.all_projects else str(root)))
    candidates = distill.mine(sequences, min_sessions=max(2, args.min_sessions), limit=max(1, args.limit))
    if args.only:
        candidates = [c for c in candidates if c.name in args.only]
    if not candidates:
        print(f"no command sequence recurs in {max(2, args.min_sessions)} of {len(sequences)} sessions", file=sys.stderr)
        return 1
    for candidate in candidates:
        if not args.apply:
            print(f"{candidate.name}: {candidate.description}")
            continue
        for client in args.client or ["claude-code"]:
            path, written = distill.write(candidate, root.joinpath(*FOLDERS[client]))
            print(f"wrote {path}" if written else f"kept {path} (not written by ctxmill)")
    if not args.apply:
        print("write them with `ctxmill distill --apply` (or --apply --only NAME)", file=sys.stderr)
    return 0
