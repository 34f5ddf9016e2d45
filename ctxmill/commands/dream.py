"""`ctxmill dream [--dry-run | --if-due | --restore ID|RUN | --archive]`: consolidate notes.md into
MEMORY.md (see memory.dream), show what a run would add and remove, or bring back what a run
removed (memory.dream_archive)."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (see tests/memory/test_cli.py)
if TYPE_CHECKING:
    from memory.dream import DreamResult


def register(subparsers) -> None:
    parser = subparsers.add_parser("dream", help="consolidate notes.md and checkpoints into MEMORY.md")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--dry-run", action="store_true", help="show what a run would add and remove; change nothing")
    what.add_argument("--if-due", action="store_true", help="only when due (7 days passed or > 20 notes)")
    what.add_argument("--restore", metavar="ID|RUN",
                      help="put back an entry a run removed (its id), or both files as they were before a run")
    what.add_argument("--archive", action="store_true", help="list the archived runs and what each removed")
    parser.set_defaults(func=run)


def describe(result: DreamResult | None) -> str:
    if result is None:
        return "not due"
    what = "changed" if result.changed else "nothing to change"
    if result.dry_run:
        what = "would change (nothing written)" if result.changed else "nothing to change"
    archive = f"; removed entries and the files as they were: {result.archive}" if result.archive else ""
    return (f"{what}: MEMORY.md {result.before} -> {result.after} entries, {result.notes} notes consumed, "
            f"{result.merged} merged, {result.superseded} superseded, {result.left_out} notes left out{archive}")


def changes(result: DreamResult) -> list[str]:
    """One line per entry a run adds or removes, with why."""
    flat = lambda text: " ".join(text.split())  # noqa: E731 - one line per entry
    lines = [f"+ {e.id} [{e.type}] {flat(e.text)}" for e in result.added]
    lines += [f"- {e.id} [{e.type}] {flat(e.text)}  ({why})" for e, why in result.removed]
    return lines


def list_archive(cfg) -> None:
    from memory.dream_archive import REMOVED_FILE, runs

    archived = runs(cfg)
    if not archived:
        print("no archived dream runs")
    for folder in archived:
        removed = folder / REMOVED_FILE
        lines = removed.read_text("utf-8").splitlines() if removed.exists() else []
        reasons = [line[2:] for line in lines if line.startswith("- m-") and ": " in line[:40]]
        print(f"{folder.name}: {len(reasons)} removed ({folder})")
        for reason in reasons:
            print(f"  {reason}")


def run(args: argparse.Namespace) -> int:
    from ctxmill.errors import CliError
    from ctxmill.settings import Settings
    from memory.dream import DreamRefused, dream, maybe_dream, record_run
    from memory.dream_archive import NothingToRestore, restore

    cfg = Settings.load().memory
    if args.archive:
        list_archive(cfg)
        return 0
    if args.restore:
        try:
            print(restore(cfg, args.restore))
        except NothingToRestore as exc:
            raise CliError(str(exc)) from None
        return 0
    try:
        if args.dry_run:
            preview = dream(cfg, dry_run=True)
            print(describe(preview))
            for line in changes(preview):
                print(line)
            return 0
        result: DreamResult | None
        if args.if_due:
            result = maybe_dream(cfg, limit_s=None)  # a person asked: no time limit
        else:
            result = dream(cfg)
            record_run(cfg, result)
    except DreamRefused as exc:
        raise CliError(str(exc)) from None
    print(describe(result))
    return 0
