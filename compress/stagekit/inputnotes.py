"""Replacing large strings of a tool input with one-line CCR notes.

Tool inputs change in exactly two stages, both through this module and both declared with
`may_edit_inputs=True`: `supersede_inputs` (bodies of writes and edits a later call made stale)
and `purge_errors` (bodies of calls that failed). The two stay separate stages because they run
from different tiers (failed inputs from `always`, superseded ones from `medium`); sharing this
module keeps one definition of how an input is noted.

What must hold for every replacement:
- The input keeps its shape: same keys, same list lengths, and a string is replaced by a string
  (a provider validates tool_use inputs against the tool's schema).
- The replacement is a note (`<<ctxmill: … · deep_expand("KEY")>>`, `ccr.markers.format_note`)
  that cannot be mistaken for file content, and KEY resolves to the exact replaced string.
- A string is replaced only under the common saving rule (`ctx.lossy`), and strings that
  already carry a marker or note are left alone, so a second run changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ccr.markers import format_note, has_marker
from compress.model import Block
from compress.stagekit.stage import StageContext

KeyPath = tuple[str | int, ...]


def large_strings(value: Any, min_chars: int, skip_keys: frozenset[str] = frozenset(),
                  path: KeyPath = ()) -> list[tuple[KeyPath, str]]:
    """(key path, string) of every string in `value` longer than `min_chars`, depth first,
    not under a key in `skip_keys`, and not already noted."""
    if isinstance(value, str):
        return [(path, value)] if len(value) > min_chars and not has_marker(value) else []
    if isinstance(value, dict):
        return [found for key, item in value.items() if key not in skip_keys
                for found in large_strings(item, min_chars, skip_keys, (*path, key))]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in large_strings(item, min_chars, skip_keys, (*path, i))]
    return []


def replace_at(value: Any, path: KeyPath, new: str) -> Any:
    """A copy of `value` with the string at `path` replaced; everything else shared."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replace_at(value[head], rest, new)}
    copy = list(value)
    copy[head] = replace_at(value[head], rest, new)  # type: ignore[index]
    return copy


def field_name(path: KeyPath) -> str:
    """The innermost key of a path (`edits[2].old_string` -> `old_string`), else `input`."""
    return next((str(k) for k in reversed(path) if isinstance(k, str)), "input")


SHORT_PATH_CHARS = 80
"""The longest path a note names: a note must stay shorter than the text it replaces, and a
single path component can be any length (a 420-character CJK file name made a note larger in
bytes than the 145-line body it stood for)."""


def short_path(path: str, keep: int = 3) -> str:
    """The last `keep` components of a path (`…/services/app/render.ex`), at most the last
    SHORT_PATH_CHARS characters of them, for a note's summary; the full path stays visible in
    the input beside it."""
    parts = path.split("/")
    short = path if len(parts) <= keep + 1 else "…/" + "/".join(parts[-keep:])
    return short if len(short) <= SHORT_PATH_CHARS else "…" + short[-(SHORT_PATH_CHARS - 1):]


def line_count(text: str) -> int:
    return text.count("\n") + (not text.endswith("\n"))


def note_strings(block: Block, strings: list[tuple[KeyPath, str]], ctx: StageContext,
                 summarize: Callable[[KeyPath, str], str]) -> Block:
    """`block` (a tool_use) with each of `strings` replaced by a note `summarize(path, text)`
    where that saves enough; the same block when nothing was replaced."""
    value = block.input
    for path, text in strings:
        summary = summarize(path, text)
        noted = ctx.lossy(text, partial(format_note, summary))
        if noted is not text:
            value = replace_at(value, path, noted)
    return block if value is block.input else block.with_input(value)
