"""`ctxmill uninstall claude-code|codex|opencode [--user|--project]`: undo `install` (same scope, default user);
the always-on proxy stops with the last client that used it."""

from __future__ import annotations

import argparse

from ctxmill.commands.install import add_host_arguments, apply


def register(subparsers) -> None:
    parser = subparsers.add_parser("uninstall", help="remove exactly what `ctxmill install` added")
    add_host_arguments(parser)
    parser.set_defaults(func=run, port=None, no_proxy=True)


def run(args: argparse.Namespace) -> int:
    return apply(args, install=False)
