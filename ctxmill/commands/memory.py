"""`ctxmill memory store|search|forget|list|reindex`: the CLI face of memory/ (see memory.api)."""

from __future__ import annotations

import argparse
import sys

from ctxmill.errors import CliError


def register(subparsers) -> None:
    from memory.entry import TYPES
    parser = subparsers.add_parser("memory", help="durable project and global memory (MEMORY.md)")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    store = sub.add_parser("store", help="add an entry")
    store.add_argument("text", help="the entry text (secrets are redacted)")
    store.add_argument("--type", required=True, help=f"one of: {', '.join(TYPES)}")
    store.add_argument("--pin", action="store_true", help="inject at every session start, never age out")
    store.add_argument("--tags", default="", help="comma-separated tags")
    store.add_argument("--global", dest="is_global", action="store_true", help="store in the global memory")
    store.add_argument("--json", action="store_true", help="print the stored entry as JSON")

    search = sub.add_parser("search", help="BM25 search over project and global memory")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=5)
    search.add_argument("--scope", default="all", choices=("all", "project", "global"))
    search.add_argument("--json", action="store_true")

    forget = sub.add_parser("forget", help="remove an entry by id")
    forget.add_argument("id")

    listing = sub.add_parser("list", help="list entries")
    listing.add_argument("--scope", default="all", choices=("all", "project", "global"))
    listing.add_argument("--json", action="store_true")

    sub.add_parser("reindex", help="rebuild the search index from the memory files")
    parser.set_defaults(func=run, logs=False)  # memory/ logs nothing: no log file to set up


def _line(entry) -> str:
    flags = " pinned" if entry.pinned else ""
    tags = "".join(f" #{t}" for t in entry.tags)
    text = " ".join(entry.text.split())
    return f"{entry.id}  {entry.scope}/{entry.type}{flags}{tags}  {text}"


def _print_json(data) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def run(args: argparse.Namespace) -> int:
    import warnings

    from ctxmill.settings import Settings
    from memory import api
    from memory.index_file import CorruptIndexWarning

    cfg = Settings.load().memory
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CorruptIndexWarning)
            _dispatch(args, api, cfg)
    except (api.BadInput, api.NotFound) as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    corrupt = [w for w in caught if issubclass(w.category, CorruptIndexWarning)]
    if corrupt:
        print(f"ctxmill memory: {corrupt[0].message}", file=sys.stderr)
        return 1
    return 0


def _dispatch(args, api, cfg) -> None:
    if args.action == "store":
        tags = [t for t in args.tags.split(",") if t.strip()]
        entry = api.store(cfg, args.type, args.text, pin=args.pin, tags=tags, scope="global" if args.is_global else "project")
        _print_json(entry.to_dict()) if args.json else print(entry.id)
    elif args.action == "search":
        hits = api.search(cfg, args.query, limit=args.limit, scope=args.scope)
        if args.json:
            _print_json([hit.to_dict() for hit in hits])
        else:
            for hit in hits:
                print(f"{hit.score:6.2f}  {hit.entry.id}  {hit.entry.scope}/{hit.entry.section}  {hit.snippet}")
    elif args.action == "forget":
        print(f"forgot {_line(api.forget(cfg, args.id))}")
    elif args.action == "list":
        entries = api.list_entries(cfg, args.scope)
        if args.json:
            _print_json([e.to_dict() for e in entries])
        else:
            for entry in entries:
                print(_line(entry))
    elif args.action == "reindex":
        print(f"indexed {api.reindex(cfg)} entries")
