"""`ctxmill replay PATH [--json] [--summary] [--format F]`.

Reads a recorded agent session (Claude Code, flat Claude, Codex, opencode, Craft, SWE-agent,
or a plain request body), replays it request by request through the compressor as a live
agent would, and reports tokens, modelled prompt-cache cost raw vs compressed, compactions,
retention and pipeline time. PATH may be a folder: every session file under it is replayed.
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
    p.add_argument("--format", choices=sorted(FORMATS), help="force the session format (default: detect)")
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


def _summary_line(report) -> str:
    r, c = report.raw, report.compressed
    saved = 100.0 * (r.tokens_sum - c.tokens_sum) / r.tokens_sum if r.tokens_sum else 0.0
    return (f"{report.source[:60]:60} {report.requests:5d} req  tokens {-saved:+6.1f}%  cost ratio "
            f"{report.cost_ratio:.3f}  compactions {r.compactions}->{c.compactions}  "
            f"retained {report.retention.fraction('recoverable'):.0%}")


def run(args: argparse.Namespace) -> int:
    import orjson

    from compress.formats.sessions import UnknownFormat, read_session, session_files
    from compress.replay.runner import replay
    from compress.tokens import get_counter
    from ctxmill.errors import CliError
    from ctxmill.settings import Settings

    settings = Settings.load()
    config = settings.compress
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
                              progress=_progress(file.name)))
    if args.json:
        data = [r.to_dict() for r in reports]
        sys.stdout.write(orjson.dumps(data if path.is_dir() else data[0], option=orjson.OPT_INDENT_2).decode() + "\n")
    elif args.summary:
        for report in reports:
            print(_summary_line(report))
        raw = sum(r.raw.cost for r in reports)
        print(f"{len(reports)} sessions, overall cost ratio {sum(r.compressed.cost for r in reports) / raw:.3f}"
              if raw else f"{len(reports)} sessions")
    else:
        print("\n\n".join(r.render() for r in reports))
    return 0
