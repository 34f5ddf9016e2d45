"""`ctxmill map [--budget N] [--root DIR] [PROMPT]`: print the repository map for a prompt.

The same map a hooked prompt gets (`repomap`), without the "already shown" check: the
repository's files and their definitions, ranked for PROMPT (or by how much each file defines,
with no prompt) and cut to N tokens. Exit 1 with one line when the folder holds no source file
tree-sitter can read.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("map", help="print the repository map ranked for a prompt",
                                   description="Print the repository's files and definitions, ranked for PROMPT.")
    parser.add_argument("prompt", nargs="*", metavar="PROMPT", help="words and identifiers to rank by")
    parser.add_argument("--budget", type=int, default=1024, metavar="N", help="tokens the map may take (default 1024)")
    parser.add_argument("--root", type=Path, metavar="DIR", help="the repository (default: the current one)")
    parser.set_defaults(func=run, logs=False)


def run(args: argparse.Namespace) -> int:
    import sys

    import xxhash

    from ctxmill.errors import CliError
    from ctxmill.paths import global_home, project_root
    from repomap.api import build_map

    if args.budget < 1:
        raise CliError("--budget must be a positive number of tokens")
    root = (args.root or project_root()).resolve()
    if not root.is_dir():
        raise CliError(f"{root}: not a folder")
    cache = global_home() / "cache" / "repomap" / f"{xxhash.xxh3_64_hexdigest(str(root).encode())}.sqlite3"
    result = build_map(root, " ".join(args.prompt), [], args.budget, cache)
    if not result.files:
        print(f"ctxmill map: no source file under {root} that the map can read", file=sys.stderr)
        return 1
    print(result.text)
    return 0
