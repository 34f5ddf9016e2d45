"""`ctxmill distill [--show] [--apply [--yes]] [PATH…]`: skill candidates from command sequences
that recur across tasks (`memory.distill`), listed, shown in full, or written as skill files.

Sessions: the history store's sessions of this project (`--all-projects`: every project), or the
session files and folders given; sessions with the same first prompt are one task. Skills go to
`<project>/.claude/skills/NAME/SKILL.md` (Claude Code; OpenCode reads these too) or, with
`--client opencode`, `<project>/.opencode/skills/`. Must hold: nothing is written before the
person reviewed it: `--apply` shows each skill file and asks before writing it (in a terminal),
or writes without asking only with `--yes` (after `--show`); a file a person wrote (no ctxmill
mark) is never replaced; a routine with a step that cannot be undone or carries a credential is
left out unless `--allow-risky`, and then its skill warns before that step.
"""

from __future__ import annotations

import argparse
import sys

from ctxmill.errors import CliError

FOLDERS = {"claude-code": (".claude", "skills"), "opencode": (".opencode", "skills")}


def register(subparsers) -> None:
    parser = subparsers.add_parser("distill", help="skill candidates from command sequences that recur across sessions")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="session files or folders (default: history)")
    parser.add_argument("--show", action="store_true", help="print each candidate's skill file in full")
    parser.add_argument("--apply", action="store_true",
                        help="write the candidates as skill files, asking for each (see --yes)")
    parser.add_argument("--yes", action="store_true",
                        help="with --apply: write without asking (review with --show first)")
    parser.add_argument("--only", action="append", metavar="NAME", help="only this candidate (repeatable)")
    parser.add_argument("--client", choices=sorted(FOLDERS), action="append",
                        help="whose skill folder to write (default: claude-code; repeatable)")
    parser.add_argument("--all-projects", action="store_true", help="mine every project's sessions in history")
    parser.add_argument("--allow-risky", action="store_true",
                        help="also offer routines with a step that cannot be undone or carries a credential "
                             "(rm -rf, force pushes, reset --hard, publishing); their skills warn before it")
    parser.add_argument("--min-sessions", type=int, default=2, help="a sequence must recur in this many tasks")
    parser.add_argument("--limit", type=int, default=5, help="candidates at most")
    parser.set_defaults(func=run)


def _from_history(settings, project: str | None) -> tuple[dict, dict]:
    from memory.history.store import HistoryError, HistoryStore

    try:
        with HistoryStore.open(settings.history) as store:
            return store.steps(project), store.first_prompts(project)
    except HistoryError as exc:
        raise CliError(str(exc)) from None


def _from_files(settings, paths) -> tuple[dict, dict]:
    from pathlib import Path

    from compress.formats.sessions import UnknownFormat, read_session, session_files
    from memory.checkpoint import session_id_for
    from memory.distill import steps_of_rows, task_of_rows
    from memory.history.messages import rows_of

    out, tasks, failures = {}, {}, []
    for path in (f for p in map(Path, paths) for f in (session_files(p) if p.is_dir() else [p])):
        try:
            transcript = read_session(path)
        except (OSError, UnknownFormat) as exc:
            failures.append(f"{path}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}")
            continue
        cfg = settings.history
        rows = rows_of(transcript, cfg.redact_extra, cfg.redact_allow)
        key = session_id_for(path)
        out[key], tasks[key] = steps_of_rows(rows), task_of_rows(rows)
    if failures and not out:
        raise CliError(failures[0] + (f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""))
    for failure in failures:
        print(f"ctxmill distill: {failure}", file=sys.stderr)
    return out, tasks


def _approved(name: str, args: argparse.Namespace) -> bool:
    if args.yes:
        return True
    answer = input(f"write {name}? [y/N] ").strip().lower()
    return answer in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    from ctxmill.paths import project_root
    from ctxmill.settings import Settings
    from memory import distill, skill_file

    if args.apply and not args.yes and not sys.stdin.isatty():
        raise CliError("--apply asks before writing each skill; without a terminal, review them with --show "
                       "and pass --yes")
    settings = Settings.load()
    root = project_root()
    sequences, tasks = (_from_files(settings, args.paths) if args.paths
                        else _from_history(settings, None if args.all_projects else str(root)))
    candidates = distill.mine(sequences, min_sessions=max(2, args.min_sessions), limit=max(1, args.limit),
                              tasks=tasks, allow_risky=args.allow_risky)
    if args.only:
        candidates = [c for c in candidates if c.name in args.only]
    if not candidates:
        print(f"no command sequence recurs in {max(2, args.min_sessions)} of {len(set(tasks.values()) or sequences)}"
              " tasks", file=sys.stderr)
        return 1
    for candidate in candidates:
        warn = " [has steps that cannot be undone: its skill warns]" if any(candidate.risky) else ""
        if args.show or args.apply:
            print(skill_file.render(candidate, str(root)))
        else:
            print(f"{candidate.name}: {candidate.description}{warn}")
        if not args.apply or not _approved(candidate.name, args):
            continue
        for client in args.client or ["claude-code"]:
            path, written = skill_file.write(candidate, root.joinpath(*FOLDERS[client]), str(root))
            print(f"wrote {path}" if written else f"kept {path} (not written by ctxmill)")
    if not args.apply:
        print("review them with `ctxmill distill --show`, write them with `ctxmill distill --apply`", file=sys.stderr)
    return 0
