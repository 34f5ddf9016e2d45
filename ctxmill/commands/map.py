"""`ctxmill map [--budget N] [--root DIR] [--transcript FILE] [PROMPT]`: the map for a prompt.

Prints exactly the text a hooked prompt gets (`ctxmill.prompt_map`) for the same prompt, budget
and recent files, without the "nothing better than last time" check: the repository's files
ranked for PROMPT (with no prompt: by how much the repository uses each and its size), the first
with their definitions, cut to N tokens (default: `[map] budget`, 512). The whole index is
brought up to date first. Exit 1 with one line when the folder holds no file the map can name.
`--index` (what the hook starts in the background) only refreshes the index, under a lock, at
low CPU priority, printing nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "map",
        help="print the repository map ranked for a prompt",
        description="Print the repository map a hooked prompt gets, ranked for PROMPT.",
    )
    parser.add_argument(
        "prompt", nargs="*", metavar="PROMPT", help="words, identifiers and paths to rank by"
    )
    parser.add_argument(
        "--budget",
        type=int,
        metavar="N",
        help="tokens the map may take (default: [map] budget, 512)",
    )
    parser.add_argument(
        "--root", type=Path, metavar="DIR", help="the repository (default: the current one)"
    )
    parser.add_argument(
        "--transcript",
        metavar="FILE",
        help="a session transcript: rank its most recently touched files higher, as the hook does",
    )
    parser.add_argument("--index", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(func=run, logs=False)


def run(args: argparse.Namespace) -> int:
    import sys

    from ctxmill.errors import CliError
    from ctxmill.paths import project_root
    from ctxmill.prompt_map import cache_of, map_for
    from ctxmill.settings import Settings

    root = (args.root or project_root()).resolve()
    if not root.is_dir():
        raise CliError(f"{root}: not a folder")
    settings = Settings.load(root / ".ctxmill")
    cache = cache_of(settings.global_home, root)
    if args.index:
        return _index(root, cache)
    budget = settings.repomap.budget if args.budget is None else args.budget
    if budget < 1:
        raise CliError("--budget must be a positive number of tokens")
    result = map_for(root, " ".join(args.prompt), args.transcript, budget, cache, wait=True)
    if not result.files:
        print(f"ctxmill map: no file under {root} that the map can name", file=sys.stderr)
        return 1
    print(result.text)
    return 0


def _index(root: Path, cache: Path) -> int:
    """Refresh the index at low CPU priority (a prompt's hook, started beside it, goes first)."""
    import contextlib
    import os

    from filelock import Timeout

    with contextlib.suppress(OSError, AttributeError):  # no nice() on this platform: as it is
        os.nice(10)

    from ground.files import private_lock
    from repomap.index import RepoIndex

    try:
        with private_lock(cache.with_suffix(".lock"), timeout=0):
            index = RepoIndex(cache.with_suffix(".sqlite3"))
            try:
                index.refresh(root)
            finally:
                index.close()
    except Timeout:
        pass  # another refresh is under way
    return 0
