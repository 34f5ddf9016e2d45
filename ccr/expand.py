"""deep_expand: get an original back from the store, whole or a slice of it.

`expand(store, key)` returns the exact original. With `lines` ("120:180", "120:", ":50";
1-based, inclusive) and/or `grep` (a regex, matched per line), it returns only those
lines, each prefixed with its line number in the original (`cat -n` style). Every problem
is a result with a one-line message, never an exception: the MCP tool and the CLI show it.
`expand_first(directories, key)` asks a chain of stores (the user's, then a project's own).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import regex

from ccr.base import OriginalsStore
from ccr.store import CCRStore, Retention, db_path
from ccr.stores import open_store
from ground.redis_client import StoreAddress

GREP_TIMEOUT_SECONDS = 1.0
MAX_GREP_LINES = 500
_LINES_HELP = 'use "120:180", "120:" or ":50" (1-based, inclusive)'


@dataclass(frozen=True)
class ExpandResult:
    key: str
    # "ok" | "expired" | "missing" | "invalid" (from the store) | "bad_request" | "no_match"
    status: str
    text: str | None
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def split_lines(text: str) -> list[str]:
    """Lines as an editor numbers them: split on "\\n", no empty line after a final newline."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def parse_lines(spec: str, total: int) -> tuple[int, int]:
    """(first, last), 1-based inclusive, clamped to `total`; ValueError with the reason."""
    first_text, colon, last_text = spec.strip().partition(":")
    try:
        first = int(first_text) if first_text.strip() else 1
        last = int(last_text) if last_text.strip() else total
        if not colon:
            last = first
    except ValueError:
        raise ValueError(f"lines={spec!r} is not a line range; {_LINES_HELP}") from None
    if first < 1:
        raise ValueError(f"lines={spec!r} is not a line range; {_LINES_HELP}")
    if first > total:
        raise ValueError(f"lines={spec!r} starts after the last line (the original has {total} lines)")
    if last < first:
        raise ValueError(f"lines={spec!r} is not a line range; {_LINES_HELP}")
    return first, min(last, total)


def _numbered(pairs: list[tuple[int, str]]) -> str:
    width = len(str(pairs[-1][0])) if pairs else 1
    return "".join(f"{number:>{width}}\t{line}\n" for number, line in pairs)


def _grep(pattern: str, pairs: list[tuple[int, str]], timeout: float) -> list[tuple[int, str]]:
    """Lines matching `pattern`; regex.error or TimeoutError (whole search over `timeout`)."""
    compiled = regex.compile(pattern)
    deadline = time.monotonic() + timeout
    return [
        (number, line)
        for number, line in pairs
        if compiled.search(line, timeout=max(deadline - time.monotonic(), 1e-6))
    ]


def expand(
    store: OriginalsStore,
    key: str,
    lines: str | None = None,
    grep: str | None = None,
    *,
    grep_timeout: float = GREP_TIMEOUT_SECONDS,
) -> ExpandResult:
    """The original for `key`, or the selected numbered lines of it, or why not."""
    found = store.get(key)
    if not found.ok or (lines is None and grep is None):
        return ExpandResult(found.key, found.status, found.text, found.message)
    all_lines = split_lines(found.text or "")

    def refuse(status: str, why: str) -> ExpandResult:
        return ExpandResult(key, status, None, f'ctxmill: deep_expand("{key}"): {why}')

    try:
        first, last = parse_lines(lines, len(all_lines)) if lines is not None else (1, len(all_lines))
    except ValueError as exc:
        return refuse("bad_request", str(exc))
    pairs = list(enumerate(all_lines[first - 1 : last], start=first))
    if grep is None:
        return ExpandResult(key, "ok", _numbered(pairs), "")
    try:
        pairs = _grep(grep, pairs, grep_timeout)
    except regex.error as exc:
        return refuse("bad_request", f"grep={grep!r} is not a valid regex ({exc})")
    except TimeoutError:
        return refuse("bad_request", f"grep={grep!r} took over {grep_timeout:g} s; simplify the pattern")
    if not pairs:
        return refuse("no_match", f"no line matches grep={grep!r} ({last - first + 1} lines searched)")
    shown = _numbered(pairs[:MAX_GREP_LINES])
    if len(pairs) > MAX_GREP_LINES:
        shown += f"ctxmill: {len(pairs) - MAX_GREP_LINES} more matching lines not shown; narrow grep or add lines\n"
    return ExpandResult(key, "ok", shown, "")


def expand_first(directories: Sequence[Path], key: str, lines: str | None = None, grep: str | None = None,
                 retention: Retention = Retention(), shared: StoreAddress | None = None) -> ExpandResult:
    """`expand` in the first store that holds `key`: the `shared` (Redis) store when configured,
    then the stores of `directories` (those that do not exist are skipped); when none does, why:
    the first store that had it and let it expire (its message says what to re-run), else the
    first that never had it, else "missing" when no store exists. CCRError when a store cannot
    be opened or read."""
    gone: dict[str, ExpandResult] = {}
    places: list[StoreAddress | Path] = [shared] if shared is not None else []
    places += [d for d in dict.fromkeys(directories) if db_path(d).exists()]
    for place in places:
        with (open_store(None, retention, place) if isinstance(place, StoreAddress)
              else CCRStore(place, retention=retention)) as store:
            result = expand(store, key, lines=lines, grep=grep)
        if result.status not in ("missing", "expired"):
            return result
        gone.setdefault(result.status, result)
    if gone:
        return gone.get("expired") or gone["missing"]
    where = ", ".join(str(d) for d in dict.fromkeys(directories))
    return ExpandResult(key, "missing", None, f'ctxmill: deep_expand("{key}"): no CCR store at {where}')
