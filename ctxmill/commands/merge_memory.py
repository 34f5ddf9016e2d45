"""`ctxmill merge-memory BASE OURS THEIRS [PATH]`: git's merge driver for memory files (see memory.merge).

git runs it as `merge.ctxmill-memory.driver` (`ctxmill install` registers it) with `%O %A %B %P`:
the result is written over OURS. Exit 0: merged, every entry whole and every id unique. Exit 1:
both sides changed the text outside entries; then OURS holds git's own line merge (with
conflict markers) for a person to resolve, as without the driver.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("merge-memory", help="git merge driver for MEMORY.md / notes.md (entry by entry)")
    parser.add_argument("base", type=Path)
    parser.add_argument("ours", type=Path)
    parser.add_argument("theirs", type=Path)
    parser.add_argument("path", nargs="?", default="", help="the file's path in the repository (git's %%P)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ground.files import atomic_write
    from memory.api import NOTES_FILE
    from memory.merge import merge

    base, ours, theirs = (p.read_bytes().decode("utf-8", "surrogateescape") for p in (args.base, args.ours, args.theirs))
    default_type = "note" if Path(args.path or args.ours).name == NOTES_FILE else None
    result = merge(base, ours, theirs, default_type=default_type)
    if not result.clean:
        print(f"ctxmill merge-memory: {args.path or args.ours}: both sides changed text outside the entries; "
              "falling back to a line merge", file=sys.stderr)
        return 1 if subprocess.run(["git", "merge-file", "-L", "ours", "-L", "base", "-L", "theirs",
                                    str(args.ours), str(args.base), str(args.theirs)]).returncode else 0
    atomic_write(args.ours, result.text.encode("utf-8", "surrogateescape"))
    for old, new in result.renamed:
        print(f"ctxmill merge-memory: {args.path or args.ours}: kept both versions of {old}; theirs is now {new}",
              file=sys.stderr)
    return 0
