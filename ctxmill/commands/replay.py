"""`ctxmill replay PATH [--json] [--summary] [--by-kind] [--format F] [--glued] [--thinking M] [--cache-ttl T]
[--headroom PY]`.

Reads a recorded agent session (Claude Code, flat Claude, Codex, opencode, Craft, SWE-agent,
or a plain request body), replays it request by request through the compressor as a live
agent would, and reports, side by side with the raw requests, the decide-once cap and (with
--headroom) headroom-ai: tokens, modelled prompt-cache cost, effective cost (plus re-reads of
lines the agent later copied into edits but could no longer see), needed lines kept by age,
compactions, retention and pipeline time; with --by-kind also where each side's cost goes, by
kind of content (file reads, command output, write and edit inputs, user text, ...). A host
compaction starts a new history whose first message is its summary (--glued: one history across
compactions, as a stress case). PATH may be a folder: every session file under it is replayed.
A progress bar shows on stderr when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    from compress.formats.sessions import FORMATS

    p = sub.add_parser("replay", help="replay a recorded session and report what ctxmill would save",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="session file, or a folder of sessions")
    p.add_argument("--json", action="store_true", help="print the report(s) as JSON")
    p.add_argument("--summary", action="store_true", help="one line per session plus a total")
    p.add_argument("--by-kind", action="store_true",
                   help="also each side's cost by kind of content (file reads, command output, tool inputs, ...)")
    p.add_argument("--format", choices=sorted(FORMATS), help="force the session format (default: detect)")
    p.add_argument("--glued", action="store_true", help="one history across host compactions (summaries left out)")
    p.add_argument("--thinking", choices=("request", "all", "latest"), default="request",
                   help="which turns' thinking the prefix holds: as the request asks (default), every turn's, "
                        "or only after the last person-written message")
    p.add_argument("--cache-ttl", choices=("auto", "5m", "1h"), default="auto",
                   help="Anthropic's cache: 5-minute (writes 1.25x) or 1-hour (2x); auto (default): what the "
                        "recording reports writing, else 5-minute")
    p.add_argument("--headroom", metavar="PYTHON", help="python of a venv with headroom-ai: add its column")
    p.add_argument("--html", metavar="FILE", help="also write the charts of the replay to FILE (a standalone page)")
    p.set_defaults(func=run)


def _progress(name: str):
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\r{name[:40]:40} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done == total:
            sys.stderr.write("\r" + " " * 90 + "\r")
        sys.stderr.flush()

    return show


def _side_cells(report) -> str:
    return "  ".join(f"{name} {report.ratio(side):.3f}/{report.ratio(side, True):.3f}/{side.needed.fraction():.2f}"
                     for name, side in report.sides().items() if name != "raw")


def short_path(path: str, width: int = 60) -> str:
    """`path` in at most `width` characters where it can be: whole leading folders give way to
    "…", the file name is always kept whole."""
    if len(path) <= width:
        return path
    *folders, kept = path.split("/")
    while folders and len(folders[-1]) + len(kept) + 3 <= width:  # "…/" + folder + "/"
        kept = f"{folders.pop()}/{kept}"
    return f"…/{kept}" if folders else kept


def _summary_line(report) -> str:
    r, c = report.raw, report.compressed
    return (f"{short_path(report.source):60} {report.requests:5d} req  modelled/effective/needed  {_side_cells(report)}"
            f"  compactions {r.compactions}->{c.compactions}  retained {report.retention.fraction('recoverable'):.0%}")


def _totals(reports) -> str:
    """Sums of costs over the sessions (not means of ratios), per side."""
    from replay.needed import AGE_BUCKETS, Needed

    raw = sum(r.raw.cost for r in reports)
    if not raw:
        return f"{len(reports)} sessions"
    cells, modelled = [], {}
    for name in reports[0].sides():
        sides = [r.sides()[name] for r in reports if name in r.sides()]
        needed = Needed()
        for side in sides:
            needed.merge(side.needed)
        ages = " ".join(f"{b} {needed.fraction(b):.2f}" for b in AGE_BUCKETS)
        modelled[name] = sum(s.cost for s in sides)
        cells.append(f"  {name:<10} modelled {modelled[name] / raw:.3f}  effective "
                     f"{sum(s.effective_cost for s in sides) / raw:.3f}  needed lines kept {needed.fraction():.3f} "
                     f"of {sum(needed.total.values())} ({ages})")
    head = sum(r.unseen_head_cost for r in reports)
    if head:
        from replay.costmodel import share_with_head

        shares = ", ".join(f"{name} {share_with_head(cost, raw, head):.3f}" for name, cost in modelled.items())
        cells.append(f"  with the unseen system+tools counted on every side: modelled {shares}")
    return f"{len(reports)} sessions, totals (sums of costs):\n" + "\n".join(cells)


def _kind_totals(reports) -> list[str]:
    """Each side's cost by kind, summed over the sessions, as shares of the raw cost."""
    from replay.by_kind import summed, table_lines

    return table_lines(summed(r.by_kind for r in reports), sum(r.raw.cost for r in reports))


def run(args: argparse.Namespace) -> int:
    import orjson

    from compress.formats.sessions import UnknownFormat, read_session, session_files
    from compress.token_counters import get_counter
    from ctxmill.errors import CliError
    from ctxmill.settings import Settings
    from replay.runner import replay

    settings = Settings.load()
    config = settings.compress
    peers = _peers(args.headroom)
    path = Path(args.path)
    if not path.exists():
        raise CliError(f"{path}: no such file or folder")
    files = session_files(path) if path.is_dir() else [path]
    if not files:
        raise CliError(f"{path}: no session files (.jsonl, .json, .traj) in this folder")
    counter = get_counter(prefer_exact=True, tiktoken_cache=settings.tiktoken_cache)
    reports = []
    for file in files:
        try:
            transcript = read_session(file, args.format)
        except UnknownFormat as exc:
            if not path.is_dir():
                raise CliError(f"{file}: {exc}") from None
            sys.stderr.write(f"ctxmill replay: skipped {file}: {exc}\n")
            continue
        except OSError as exc:
            raise CliError(f"cannot read {file}: {exc.strerror or exc}") from None
        if not transcript.calls:
            sys.stderr.write(f"ctxmill replay: {file}: no model calls found\n")
        reports.append(replay(transcript, source=str(file), config=config, counter=counter,
                              progress=_progress(file.name), peers=peers, glued=args.glued,
                              thinking=args.thinking, cache_ttl=args.cache_ttl, by_kind=args.by_kind))
    if args.json:
        data = [r.to_dict() for r in reports]
        sys.stdout.write(orjson.dumps(data if path.is_dir() else data[0], option=orjson.OPT_INDENT_2).decode() + "\n")
    elif args.summary:
        for report in reports:
            print(_summary_line(report))
        print(_totals(reports))
        if args.by_kind:
            print("\n".join(_kind_totals(reports)))
    else:
        print("\n\n".join(r.render() for r in reports))
    if args.html:
        from ctxmill.dashboard.replay_page import write_html

        write_html(reports, Path(args.html))
    return 0


def _peers(python: str | None) -> dict:
    if not python:
        return {}
    from ctxmill.errors import CliError
    from replay.headroom_peer import Headroom, available

    if not available(python):
        raise CliError(f"{python}: cannot import headroom (install headroom-ai in that venv)")
    return {"headroom": Headroom(python)}
