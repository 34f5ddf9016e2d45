"""crush_json: shorten tool results that are one JSON document holding long arrays.

Only a result whose whole text is one JSON object or array is touched (or a JSON content array
whose text is one: an MCP tool's JSON answer, `compress.stagekit.content_arrays`); JSON mixed with
other text is left to trim_outputs. Two forms are tried, in order:

1. Lossless table: every array of at least `table_min_rows` objects sharing one key set becomes
   `{"_ctxmill": "<marker>", "columns": [keys…], "rows": [[values…], …]}`. Kept if the whole
   result shrinks by >= 15% (and 200 chars).
2. Lossy crush: an array longer than `max_items` (nested arrays: `nested_max_items`) keeps its
   head (`head_fraction` of `max_items`), its tail (`tail_fraction`), every item that looks like
   an error (`compress.vocab.signals.errors.is_error_item`) or an anomaly (`anomalous_indexes`), the
   first item carrying an object key (at any depth) not kept yet (so no key name disappears), and
   middle items of a shape (keys and value types) not kept yet, up to `max_items`. Each run of
   dropped items is replaced, in place, by one string element holding a marker:
   `"[ctxmill: 457 items omitted here (array kept 15 of 472) · deep_expand(\\"KEY\\")]"`.

Objects never lose keys; output is compact valid JSON. A model reads the marker string as
what it is (it names ctxmill, a count and the expand call) and data never looks like it. Every
marker's key is the CCR key of the whole original result. Documents nested deeper than
`MAX_DEPTH` are walked only to that depth; deeper ones that orjson cannot re-serialize stay as
they were. Linear time in the size of the document.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ccr.markers import format_marker
from compress.config import options_as
from compress.model import Block, Message
from compress.stagekit.content_arrays import content_array_text
from compress.stagekit.lossy import accept
from compress.stagekit.stage import Stage, StageContext, each_block
from compress.tiers import Tier
from compress.vocab.signals.errors import is_error_item
from ground.jsonbytes import parse_document

MAX_DEPTH = 64
"""Arrays and objects below this depth are kept as they are (bounded recursion)."""


@dataclass(frozen=True)
class CrushOptions:
    max_items: int = 15
    nested_max_items: int = 30
    head_fraction: float = 0.30
    tail_fraction: float = 0.15
    table_min_rows: int = 5


def _dumps(value: Any) -> str | None:
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):  # nesting beyond orjson's limit, odd numbers
        return None


# -- lossless table form ---------------------------------------------------------------


def _map_values(obj: dict, fn: Callable[[Any], tuple[Any, int]]) -> tuple[dict, int]:
    """`obj` with `fn` applied to every value (all keys kept), and the sum of its counts."""
    total = 0
    out = {}
    for k, v in obj.items():
        out[k], n = fn(v)
        total += n
    return out, total


def _table_columns(items: list, min_rows: int) -> list[str] | None:
    if len(items) < min_rows or not all(isinstance(item, dict) and item for item in items):
        return None
    columns = list(items[0])
    keyset = set(columns)
    if all(len(item) == len(columns) and keyset.issuperset(item) for item in items):
        return columns
    return None


def tabulate(value: Any, key: str, opts: CrushOptions, depth: int = 0) -> tuple[Any, int]:
    """`value` with every uniform array of objects in table form, and how many tables."""
    if depth >= MAX_DEPTH:
        return value, 0
    if isinstance(value, dict):
        return _map_values(value, lambda v: tabulate(v, key, opts, depth + 1))
    if not isinstance(value, list):
        return value, 0
    columns = _table_columns(value, opts.table_min_rows)
    if columns is None:
        pairs = [tabulate(v, key, opts, depth + 1) for v in value]
        return [v for v, _ in pairs], sum(n for _, n in pairs)
    total = 0
    rows = []
    for item in value:
        row = []
        for column in columns:
            cell, n = tabulate(item[column], key, opts, depth + 2)
            row.append(cell)
            total += n
        rows.append(row)
    note = format_marker(f"table of {len(rows)} objects: each row lists the values of columns in order", key)
    return {"_ctxmill": note, "columns": columns, "rows": rows}, total + 1


# -- lossy crush -----------------------------------------------------------------------


def _shape(item: Any) -> Any:
    if isinstance(item, dict):
        return tuple((k, type(v).__name__) for k, v in item.items())
    return type(item).__name__


def keys_within(value: Any) -> set:
    """Every object key inside `value` down to MAX_DEPTH (iterative)."""
    keys: set = set()
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth >= MAX_DEPTH:
            continue
        if isinstance(v, dict):
            keys.update(v)
            stack.extend((x, depth + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v if isinstance(x, (dict, list)))
    return keys


def choose_items(items: list, limit: int, opts: CrushOptions) -> list[int]:
    """Sorted indexes of the items an array longer than `limit` keeps (see module docstring)."""
    n = len(items)
    head = math.ceil(opts.head_fraction * limit)
    tail = math.ceil(opts.tail_fraction * limit)
    keep = set(range(min(head, n))) | set(range(max(0, n - tail), n))
    keep |= {i for i, item in enumerate(items) if is_error_item(item)}
    keep |= anomalous_indexes(items)
    seen_keys: set = set()
    for i in sorted(keep):
        seen_keys |= keys_within(items[i])
    for i, item in enumerate(items):
        if isinstance(item, (dict, list)):
            keys = keys_within(item)
            if not seen_keys.issuperset(keys):
                keep.add(i)
                seen_keys |= keys
    seen_shapes = {_shape(items[i]) for i in keep}
    for i in range(head, n - tail):
        if len(keep) >= limit:
            break
        shape = _shape(items[i])
        if shape not in seen_shapes:
            seen_shapes.add(shape)
            keep.add(i)
    return sorted(keep)


def anomalous_indexes(items: list, max_share: float = 0.1) -> set[int]:
    """Indexes of array items that stand out from the rest, in linear time: objects whose
    scalar field holds a rare value where one value is the majority (a `status` of "failed"
    among "ok"s), and numbers (or numeric fields) more than 3 standard deviations from the mean.
    A field with more than `max_share` of the items standing out is diverse, not anomalous."""
    n = len(items)
    if n < 8:
        return set()
    columns: dict[str, list[tuple[int, object]]] = {}
    for i, item in enumerate(items):
        if isinstance(item, dict):
            for key, value in item.items():
                if value is None or isinstance(value, (str, int, float)):
                    columns.setdefault(key, []).append((i, value))
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            columns.setdefault("", []).append((i, item))
    limit = max(1, int(max_share * n))
    out: set[int] = set()
    for column in columns.values():
        flagged = _numeric_outliers(column) if _all_numbers(column) else _rare_values(column, limit)
        if 0 < len(flagged) <= limit:
            out.update(flagged)
    return out


def _all_numbers(column: list[tuple[int, object]]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for _, v in column)


def _numeric_outliers(column: list[tuple[int, object]]) -> list[int]:
    if len(column) < 8:
        return []
    values = [float(v) for _, v in column]  # type: ignore[arg-type]
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    if std == 0:
        return []
    return [i for (i, _), v in zip(column, values) if abs(v - mean) > 3 * std]


def _rare_values(column: list[tuple[int, object]], limit: int) -> list[int]:
    counts: dict[object, int] = {}
    for _, value in column:
        if isinstance(value, str) and len(value) > 200:
            return []  # free text, not a categorical field
        counts[value] = counts.get(value, 0) + 1
    top = max(counts.values())
    if top * 2 < len(column) or len(counts) == 1:
        return []
    return [i for i, value in column if counts[value] <= limit and counts[value] < top]


def crush(value: Any, key: str, opts: CrushOptions, depth: int = 0) -> tuple[Any, int]:
    """`value` with long arrays cut (markers in place of dropped runs), and how many items
    were dropped."""
    if depth >= MAX_DEPTH:
        return value, 0
    if isinstance(value, dict):
        return _map_values(value, lambda v: crush(v, key, opts, depth + 1))
    if not isinstance(value, list):
        return value, 0
    limit = opts.max_items if depth <= 1 else opts.nested_max_items
    kept = range(len(value)) if len(value) <= limit else choose_items(value, limit, opts)
    out: list = []
    dropped = 0
    previous = -1
    for i in kept:
        if i - previous > 1:
            out.append(_gap(i - previous - 1, len(kept), len(value), key))
        item, n = crush(value[i], key, opts, depth + 1)
        out.append(item)
        dropped += n + (i - previous - 1)
        previous = i
    if previous < len(value) - 1:
        out.append(_gap(len(value) - 1 - previous, len(kept), len(value), key))
        dropped += len(value) - 1 - previous
    return out, dropped


def _gap(count: int, kept: int, total: int, key: str) -> str:
    noun = "item" if count == 1 else "items"
    return format_marker(f"{count:,} {noun} omitted here (array kept {kept:,} of {total:,})", key)


# -- the stage -------------------------------------------------------------------------


def crush_text(text: str, key: str, opts: CrushOptions, min_fraction: float = 0.15) -> str | None:
    """The shortened form of a JSON result (markers carry `key`), or None when there is none:
    the table form if it saves `min_fraction`, else the crushed form if it dropped items. A JSON
    content array whose text is JSON (an MCP tool's JSON answer, `compress.stagekit.content_arrays`)
    is crushed as that JSON."""
    inner = content_array_text(text)
    value = parse_document(text if inner is None else inner)
    if value is None or not isinstance(value, (list, dict)):
        return None
    table, tables = tabulate(value, key, opts)
    if tables:
        rendered = _dumps(table)
        if rendered is not None and len(rendered) <= (1 - min_fraction) * len(text):
            return rendered
    crushed, dropped = crush(value, key, opts)
    return _dumps(crushed) if dropped else None


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    opts = options_as(CrushOptions, ctx.config.options("crush_json"))

    def crush_block(msg: Message, block: Block) -> Block:
        if not ctx.may_compress_result(block):
            return block
        text = block.result_text
        short = accept(ctx, text, lambda key: crush_text(text, key, opts, ctx.config.min_saving_fraction),
                       hint=ctx.rerun_hint(block))
        return block.with_result_text(short)

    return each_block(messages, ctx, crush_block, "crushed JSON arrays")

STAGE = Stage("crush_json", run, Tier.ALWAYS, options=CrushOptions)
