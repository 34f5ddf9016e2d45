"""`ctxmill history search|get|list|import|stats` and `ctxmill import PATH…`: the CLI face of
memory/history (the store of past sessions, secrets redacted, one per user)."""

from __future__ import annotations

import argparse
import sys

from ctxmill.errors import CliError


def _import_args(parser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="session files or folders of them (any format "
                        "`ctxmill replay` reads: Claude Code, Codex, OpenCode, claude-flat, craft, SWE-agent)")
    parser.add_argument("--format", dest="fmt", help="read every file as this format instead of detecting it")
    parser.add_argument("--project", help="the project of sessions that do not name their folder (default: this one)")
    parser.set_defaults(func=run, action="import")


def register(subparsers) -> None:
    parser = subparsers.add_parser("history", help="search and read past sessions (every project, secrets redacted)")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    search = sub.add_parser("search", help="words (best first) or --regex, over every kept message")
    search.add_argument("query")
    search.add_argument("--regex", action="store_true", help="the query is a regular expression")
    for name, what in (("project", "a project's path or folder name"), ("session", "a session key or its start"),
                       ("since", "7d, 12h, 30m or an ISO date"), ("until", "7d, 12h, 30m or an ISO date")):
        search.add_argument(f"--{name}", help=what)
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--json", action="store_true")
    get = sub.add_parser("get", help="a message or a range of a session, with neighbours")
    get.add_argument("session")
    get.add_argument("messages", help="a message number (12) or a range (10:20)")
    get.add_argument("--context", type=int, default=2, help="neighbours on each side (default 2)")
    get.add_argument("--json", action="store_true")
    listing = sub.add_parser("list", help="sessions kept, most recent first")
    listing.add_argument("--project")
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--json", action="store_true")
    sub.add_parser("stats", help="how much the store holds, and its budget")
    _import_args(sub.add_parser("import", help="add recorded sessions (only their new messages)"))
    parser.set_defaults(func=run)
    _import_args(subparsers.add_parser("import", help="add recorded sessions to history (same as `history import`)"))


def _json(data) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def run(args: argparse.Namespace) -> int:
    from ctxmill.history_tools import HistoryToolError
    from ctxmill.settings import Settings

    settings = Settings.load()
    try:
        return {"search": _search, "get": _get, "list": _list, "stats": _stats, "import": _import}[args.action](
            settings, args)
    except HistoryToolError as exc:
        raise CliError(str(exc)) from None


def _search(settings, args) -> int:
    from ctxmill.history_tools import search_tool

    found = search_tool(settings, args.query, args.regex, args.project, args.session, args.since, args.until,
                        args.limit)
    if args.json:
        _json(found)
        return 0
    for hit in found["hits"]:
        print(f"{hit['session']} #{hit['seq']} {hit['role']} · {hit['updated']} · {hit['project']}\n  {hit['snippet']}")
    for key in ("stopped", "note"):
        if key in found:
            print(found[key], file=sys.stderr)
    return 0 if found["hits"] else 1


def _get(settings, args) -> int:
    from ctxmill.history_tools import get_tool

    rows = get_tool(settings, args.session, args.messages, args.context)
    if args.json:
        _json(rows)
    for row in [] if args.json else rows:
        print(f"── {row['session']} #{row['seq']} {row['role']}\n{row['text']}")
    return 0 if rows else 1


def _open(settings):
    from memory.history.store import HistoryError, HistoryStore

    try:
        return HistoryStore.open(settings.history)
    except HistoryError as exc:
        raise CliError(str(exc)) from None


def _list(settings, args) -> int:
    from dataclasses import asdict

    from memory.history.query import when

    with _open(settings) as store:
        sessions = store.sessions(args.project, args.limit)
    if args.json:
        _json([asdict(s) for s in sessions])
    for s in [] if args.json else sessions:
        print(f"{s.key}  {when(s.updated)}  {s.count} messages  {s.format}  {s.project}")
    return 0


def _stats(settings, args) -> int:
    with _open(settings) as store:
        stats = store.stats()
    print(f"{stats['sessions']} sessions, {stats['messages']} messages, {stats['bytes'] / 2**20:.1f} of "
          f"{stats['max_bytes'] / 2**20:.0f} MB ({stats['path']})" + ("" if settings.history.enabled else "; turned off"))
    return 0


def _import(settings, args) -> int:
    from pathlib import Path

    from compress.formats.sessions import UnknownFormat, session_files
    from ctxmill.paths import project_root
    from memory.history.ingest import ingest_file
    from memory.history.store import HistoryError, SessionTooLarge

    if not settings.history.enabled:
        raise CliError("history is turned off ([history] enabled = false in config.toml)")
    project = args.project or str(project_root())
    files = [f for p in map(Path, args.paths) for f in (session_files(p) if p.is_dir() else [p])]
    failed = added = 0
    for path in files:
        try:
            done = ingest_file(settings.history, path, project, fmt=args.fmt)
        except SessionTooLarge as exc:  # this file only: the others may fit
            print(f"ctxmill import: {path}: {exc}", file=sys.stderr)
            failed += 1
            continue
        except HistoryError as exc:  # the store, not this file: no other file would fare better
            raise CliError(f"history store: {exc}") from None
        except (OSError, UnknownFormat, ValueError) as exc:
            print(f"ctxmill import: {path}: {exc}", file=sys.stderr)
            failed += 1
            continue
        assert done is not None, "ingest_file stores unless history is off, checked above"
        added += done.added
        kept = f", {done.kept} already kept" if done.kept else ""
        evicted = (f", {done.evicted} older sessions evicted to stay within the budget"
                   if done.evicted else "")
        print(f"{path}: {done.added} new messages{kept}{evicted}")
    if len(files) > 1:
        print(f"{len(files) - failed} sessions, {added} new messages")
    return 1 if failed else 0
