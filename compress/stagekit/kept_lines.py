"""Which lines of a long tool output to keep, per tool kind, and how to render the cut.

Pure text functions used by the trim_outputs stage. Every selector returns the indexes of the
lines it keeps (lines are `text.split("\\n")`) and a summary; `render` writes the kept lines
verbatim and in order (indentation and line numbers untouched), puts the full marker at the
first cut and a short `[ctxmill: N lines omitted]` at every later one. Kept lines longer than
`max_line_chars` are cut in the middle with an inline `[ctxmill: N chars cut]`.
All selectors are linear in the number of lines; patterns have no nested quantifiers.
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ccr.markers import chars_cut, entries_omitted, format_marker, lines_omitted
from compress.stagekit.line_numbers import NUMBER_PREFIX
from compress.vocab.files import is_prose
from compress.vocab.signals.errors import error_line_numbers


@dataclass(frozen=True)
class Budget:
    """Line budgets of one output after tier, age and staleness scaling."""

    head: int
    key: int
    tail: int
    context: int
    max_line_chars: int
    search_files: int
    search_matches: int
    list_dirs: int
    list_names: int


@dataclass
class Selection:
    keep: set[int]
    summary: str


_DEFINITION = r"""[ \t]{0,8}(?:
        (?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?
          (?:def|class|function|interface|enum|struct|trait|impl|type|module|namespace|fn|func
             |defmodule|defp|defmacro|defimpl|defprotocol|describe|test)\b
      | pub(?:\([\w:]+\))?[ \t]+(?:async[ \t]+)?(?:fn|struct|enum|trait|mod|const|static|type)\b
      | (?:export[ \t]+)?(?:const|let|var)[ \t]+\w+[ \t]*=[ \t]*(?:async[ \t]*)?(?:\(|function\b)
      | (?:public|private|protected|internal|abstract|override)[ \t]
      | (?:import|from|using|require|include|package|use|alias)\b
      | \#include\b
    )"""
_HEADING_SOURCE = r"[ \t]{0,3}\#{1,6}[ \t]\S"
_HEADING = re.compile("^" + _HEADING_SOURCE, re.VERBOSE)
# Key lines of a file read, found in one pass over the text: each line start, its number prefix
# if any (possessive: once present it is never re-read as content), then the key pattern. No
# pattern crosses a newline, so a match is exactly a per-line match of the line it starts.
_DEFINITION_LINE = re.compile(f"^(?:{NUMBER_PREFIX})?+{_DEFINITION}", re.MULTILINE | re.VERBOSE)
_HEADING_LINE = re.compile(f"^(?:{NUMBER_PREFIX})?+{_HEADING_SOURCE}", re.MULTILINE | re.VERBOSE)


def _spread(indexes: list[int], limit: int) -> list[int]:
    """At most `limit` of `indexes`, evenly spaced (deterministic)."""
    if len(indexes) <= limit:
        return indexes
    if limit <= 0:
        return []
    step = len(indexes) / limit
    return [indexes[int(k * step)] for k in range(limit)]


def _head_tail(n: int, head: int, tail: int) -> set[int]:
    return set(range(min(head, n))) | set(range(max(0, n - tail), n))


def _detail(head: int, key: int, tail: int, key_word: str = "key") -> str:
    parts = [f"head {head}"] if head else []
    if key:
        parts.append(f"{key} {key_word}")
    if tail:
        parts.append(f"tail {tail}")
    return ", ".join(parts)


def _finish(n: int, keep: set[int], head: int, tail: int, key_word: str, noun: str = "lines") -> Selection:
    head_set = _head_tail(n, head, tail)
    key = len(keep - head_set)
    return Selection(keep, f"kept {len(keep):,} of {n:,} {noun} ({_detail(min(head, n), key, min(tail, n), key_word)})")


def select_file_read(lines: list[str], budget: Budget, path: str = "") -> Selection:
    """Head, tail, and key lines (definitions, imports, headings of prose files, errors)."""
    n = len(lines)
    base = _head_tail(n, budget.head, budget.tail)
    prose = is_prose(path)
    middle = "\n".join(lines[budget.head:n - budget.tail])
    key = [budget.head + i for i in _line_numbers((_HEADING_LINE if prose else _DEFINITION_LINE).finditer(middle), middle)]
    wanted = set(_spread(key, budget.key))
    room = budget.key - len(wanted)
    if room > 0:  # no room left: the error scan could add nothing
        wanted |= set(_spread([budget.head + i for i in error_line_numbers(middle)], room))
    return _finish(n, base | wanted, budget.head, budget.tail, "key")


def _line_numbers(matches: Iterator[re.Match], text: str) -> list[int]:
    """Indexes, in `text.split("\\n")`, of the lines where `matches` (in text order) start."""
    out: list[int] = []
    line = at = 0
    for m in matches:
        line += text.count("\n", at, m.start())
        at = m.start()
        out.append(line)
    return out


def select_command(lines: list[str], budget: Budget, text: str) -> Selection:
    """Head, tail, and every error line with `context` lines around it (all of them, always)."""
    n = len(lines)
    keep = _head_tail(n, budget.head, budget.tail)
    errors = error_line_numbers(text)
    for i in errors:
        keep.update(range(max(0, i - budget.context), min(n, i + budget.context + 1)))
    sel = _finish(n, keep, budget.head, budget.tail, "error and context")
    if errors:
        sel.summary += f"; all {len(errors):,} error lines kept"
    return sel


def select_prose(lines: list[str], budget: Budget, text: str) -> Selection:
    """Subagent, web and other output: head, tail, headings and error lines."""
    n = len(lines)
    key = [i for i in range(budget.head, n - budget.tail) if _HEADING.match(lines[i])]
    errors = [i for i in error_line_numbers(text) if budget.head <= i < n - budget.tail]
    wanted = set(_spread(sorted(set(key) | set(errors)), budget.key))
    return _finish(n, _head_tail(n, budget.head, budget.tail) | wanted, budget.head, budget.tail, "headings and key")


_MATCH_LINE = re.compile(
    r"^(?P<path>(?:[A-Za-z]:[\\/])?[^\s:][^:\n]{0,500}?)(?::(?P<n>\d{1,9})[:-]|-(?P<c>\d{1,9})-|:)")
"""A search hit `path:line:text` (or a context line `path-line-text`); the path may start with a
Windows drive (`C:\\repo\\a.go:12:...`, as Claude Code's Grep prints on Windows)."""


def _looks_like_path(value: str) -> bool:
    return ("/" in value or "\\" in value or "." in value) and " " not in value and not value.isdigit()


def _directory(path: str) -> str:
    """The directory part of a listed path, POSIX or Windows (backslashes)."""
    if "\\" in path:
        return ntpath.dirname(path.rstrip("\\/"))
    return posixpath.dirname(path.rstrip("/"))


def select_search(lines: list[str], budget: Budget) -> Selection | None:
    """Grep-style `path:line:text` output grouped by file: the first `search_files` files,
    `search_matches` lines each. None when the lines do not name files."""
    groups: dict[str, list[int]] = {}
    other: list[int] = []
    for i, line in enumerate(lines):
        m = _MATCH_LINE.match(line)
        if m and _looks_like_path(m.group("path")):
            groups.setdefault(m.group("path"), []).append(i)
        else:
            other.append(i)
    named = len(lines) - len(other)
    if len(groups) < 2 or named < 0.6 * len([x for x in lines if x.strip()]):
        return None
    keep = {i for i in other if lines[i].strip() and lines[i] != "--"}
    files = list(groups)
    shown = files[:budget.search_files]
    for path in shown:
        keep.update(groups[path][:budget.search_matches])
    kept_matches = sum(min(len(groups[p]), budget.search_matches) for p in shown)
    rest = files[budget.search_files:]
    rest_lines = sum(len(groups[p]) for p in rest)
    summary = (f"kept {kept_matches:,} of {named:,} result lines: {len(shown)} of {len(files):,} files,"
               f" up to {budget.search_matches} lines each")
    if rest:
        summary += f"; {len(rest):,} more files with {rest_lines:,} lines"
    return Selection(keep, summary)


def group_file_list(lines: list[str], budget: Budget) -> tuple[list[str], str] | None:
    """A list of paths as its first `list_dirs` directories (in order of first appearance),
    each with its first `list_names` entries and a count of the rest. None if not paths."""
    dirs: dict[str, list[int]] = {}
    header: list[int] = []
    for i, line in enumerate(lines):
        entry = line.strip()
        if entry and _looks_like_path(entry) and "\t" not in entry:
            dirs.setdefault(_directory(entry), []).append(i)
        elif entry:
            header.append(i)
    entries = sum(len(v) for v in dirs.values())
    if entries < 0.6 * (entries + len(header)) or entries == 0:
        return None
    out = [lines[i] for i in header]
    shown = list(dirs)[:budget.list_dirs]
    for d in shown:
        members = dirs[d]
        out.extend(lines[i] for i in members[:budget.list_names])
        if len(members) > budget.list_names:
            out.append(entries_omitted(len(members) - budget.list_names, d or ".", len(members)))
    rest = list(dirs)[budget.list_dirs:]
    summary = f"{entries:,} paths in {len(dirs):,} directories, grouped by directory with counts"
    if rest:
        summary += f"; {len(rest):,} more directories with {sum(len(dirs[d]) for d in rest):,} paths not shown"
    return out, summary


def cut_long_line(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    head = limit * 2 // 3
    tail = limit - head
    return f"{line[:head]} {chars_cut(len(line) - limit)} {line[-tail:]}"


def render(lines: list[str], sel: Selection, key: str, max_line_chars: int) -> str:
    """Kept lines in order; the full marker at the first cut (or the end), short notes at
    later cuts."""
    out: list[str] = []
    placed = False
    previous = -1
    for i in sorted(sel.keep):
        if i - previous > 1:
            out.append(_gap(i - previous - 1, sel.summary, key, placed))
            placed = True
        out.append(cut_long_line(lines[i], max_line_chars))
        previous = i
    if previous < len(lines) - 1:
        out.append(_gap(len(lines) - 1 - previous, sel.summary, key, placed))
        placed = True
    if not placed:
        out.append(format_marker(sel.summary, key))
    return "\n".join(out)


def _gap(count: int, summary: str, key: str, short: bool) -> str:
    if short:
        return lines_omitted(count)
    return format_marker(f"{count:,} line{'s' if count != 1 else ''} omitted here; {summary}", key)
