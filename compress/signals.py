"""What looks like an error in tool output, in English and Chinese. Linear-time patterns only.

Shared by the stages that must keep errors visible (trim_outputs, crush_json, purge_errors)
and by the replay's retention check, so "an error line" means the same thing everywhere.
"""

from __future__ import annotations

import bisect
import re

import regex

from compress.model import Block

ERROR_KEYS = frozenset({"error", "errors", "exception", "exceptions", "failure", "failures", "err", "stderr",
                        "fault", "traceback", "stacktrace", "stack_trace"})
"""JSON object keys whose non-empty value means the object reports an error."""
STATUS_KEYS = frozenset({"status", "state", "level", "severity", "result", "outcome", "conclusion", "ok",
                         "success", "exit_code", "exitcode", "returncode", "code"})
"""JSON object keys whose value tells whether the object reports an error."""
_MAX_SCAN = 4_000

_ERROR_WORDS = regex.compile(
    r"""(?ix)
    \b(?:error|errors|exception|traceback|failed|failure|failures|fatal|panic(?:ked)?|segmentation\ fault
       |assertionerror|cannot|can't|could\ not|unable\ to|not\ found|no\ such\ file|permission\ denied
       |denied|refused|timed?\ ?out|undefined|unresolved|errno|exit\ (?:code|status)\ [1-9]\d*
       |non-zero\ exit|warning|deprecated|critical)\b
    | 错误 | 失败 | 异常 | 报错 | 无法 | 找不到 | 未找到 | 超时 | 拒绝 | 崩溃 | 警告
    | ^[ \t]*E[ \t]{2,}\S          # pytest failure lines
    | ^[ \t]*File\ "[^"\n]*",\ line\ \d+  # Python traceback frames
    | ^[ \t]*at\ [\w.$<>]+\(      # Java/JS stack frames
    | <tool_use_error>
    | \b\w+(?:error|exception):  # ValueError: … / TypeError: … at the end of a traceback
    """,
    regex.MULTILINE,
)

_TRIGGERS = (
    "error", "exception", "traceback", "fail", "fatal", "panic", "segmentation", "cannot", "can't",
    "could not", "unable", "not found", "no such", "denied", "refused", "time", "undefined",
    "unresolved", "errno", "exit ", "non-zero", "warning", "deprecated", "critical",
    "错误", "失败", "异常", "报错", "无法", "找不到", "未找到", "超时", "拒绝", "崩溃", "警告",
    "e  ", "e \t", "e\t", 'file "', "at ",
)
"""Lower-case substrings of which every match of `_ERROR_WORDS` contains one (keep in step):
a line without any of them is not an error line, so long texts are scanned with str.find."""
_WORD_TRIGGERS = frozenset({"error", "exception", "fatal", "cannot", "undefined", "unresolved", "errno", "warning",
                            "deprecated", "critical", "denied", "refused"})
"""Triggers that are whole alternatives of `\\b(?:...)\\b` in `_ERROR_WORDS`, spelled with letters no
non-ASCII character lower-cases to: one standing between non-word ASCII characters (or the text's
ends) is a match, so its line needs no regex search."""
_WIDE_TRIGGER_START = re.compile("[%s]" % "".join(sorted({t[0] for t in _TRIGGERS if not t.isascii()})))
"""The first characters of the non-ASCII triggers: without one, none of them occurs."""
_NON_WORD = frozenset(c for c in map(chr, range(128)) if not (c.isalnum() or c == "_"))
"""ASCII characters that are not word characters: one beside a word makes a word boundary."""
_TRIGGER_BITS = 6  # positions are recorded as (position << _TRIGGER_BITS) | trigger index
_TRIGGER_MASK = (1 << _TRIGGER_BITS) - 1
_WINDOW = 20_000
"""Lines longer than this are checked only around their triggers (within 200 chars)."""

_FAILED_START = regex.compile(
    r"(?i)^\s*(?:<tool_use_error>|error\b|error:|fatal:|exception|traceback|exit code [1-9]|command failed|错误|失败)")


def is_error_line(line: str) -> bool:
    return _ERROR_WORDS.search(line) is not None


def error_line_indexes(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if _ERROR_WORDS.search(line)]


def error_line_numbers(text: str) -> list[int]:
    """Sorted indexes, in `text.split("\\n")`, of the lines `is_error_line` accepts; linear
    time (str.find for triggers, the pattern only on lines holding one)."""
    low = text.lower()
    if len(low) != len(text):  # a few characters change length when lower-cased
        return error_line_indexes(text.split("\n"))
    positions: list[int] = []
    wide = not text.isascii() and _WIDE_TRIGGER_START.search(low) is not None
    for index, trigger in enumerate(_TRIGGERS):
        if not (wide or trigger.isascii()):
            continue  # one character class scan instead of a pass per non-ASCII trigger
        at = low.find(trigger)
        while at >= 0:
            positions.append(at << _TRIGGER_BITS | index)
            at = low.find(trigger, at + 1)
    positions.sort()
    found: list[int] = []
    line = line_start = 0
    k = 0
    while k < len(positions):
        pos, index = positions[k] >> _TRIGGER_BITS, positions[k] & _TRIGGER_MASK
        newlines = text.count("\n", line_start, pos)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        trigger = _TRIGGERS[index]
        stop = pos + len(trigger)
        word = (trigger in _WORD_TRIGGERS and (pos == 0 or low[pos - 1] in _NON_WORD)
                and (stop == len(low) or low[stop] in _NON_WORD))
        short = end - line_start <= _WINDOW
        if short:
            hit = word or _ERROR_WORDS.search(text, line_start, end) is not None
        else:
            hit = word or _ERROR_WORDS.search(text[max(line_start, pos - 200):min(end, pos + 200)]) is not None
        if hit:
            found.append(line)
        if hit or short:  # the line is decided: go on with the first trigger after it
            k = bisect.bisect_left(positions, end << _TRIGGER_BITS, k + 1)
        else:
            k += 1
    return found


def first_error_line(text: str) -> str | None:
    """The first line of `text` that looks like an error, stripped; None if there is none."""
    match = _ERROR_WORDS.search(text)
    if match is None:
        return None
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start:end if end >= 0 else len(text)].strip()


def is_failed_result(block: Block) -> bool:
    """A tool_result that reports a failure: flagged `is_error`, or (providers without the
    flag) text that opens like an error report."""
    return block.is_error or _FAILED_START.match(block.result_text[:300]) is not None


def is_error_item(item: object) -> bool:
    """A JSON array item that reports an error: a string that reads as an error line, or an
    object with a non-empty error-like key, a status-like key holding an error word, or
    `ok`/`success` false. Looks one level deep only (linear in the item's top level)."""
    if isinstance(item, str):
        return is_error_line(item[:_MAX_SCAN])
    if not isinstance(item, dict):
        return False
    for key, value in item.items():
        low = key.lower() if isinstance(key, str) else ""
        if low in ERROR_KEYS and value not in (None, "", False, 0, [], {}):
            return True
        if low in STATUS_KEYS:
            if value is False and low in ("ok", "success"):
                return True
            if isinstance(value, str) and is_error_line(value[:_MAX_SCAN]):
                return True
    return False


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


# -- what is worth remembering in prose: decisions, constraints, fixes, paths --------------

_DECISION_CUES = {
    "decision": regex.compile(
        r"""(?ix)
        \b(?:decided|decide\ to|decision|we(?:'ll|\ will|\ are\ going\ to)|i(?:'ll|\ will)\ (?:use|switch|go\ with|keep)
           |instead\ of|rather\ than|switch(?:ed)?\ to|chose|choose|opted|going\ with|let's\ use|plan\ is)\b
        | 决定 | 改为 | 改用 | 采用 | 选择 | 而不是 | 换成 | 方案是
        """),
    "constraint": regex.compile(
        r"""(?ix)
        \b(?:must(?:\ not|n't)?|never|always|do\ not|don't|should\ not|shouldn't|requirement
           |constraint|only\ use|not\ allowed|forbidden)\b
        | 必须 | 不要 | 不能 | 不可 | 禁止 | 务必 | 一定要 | 只能 | 不允许 | 切勿
        """),
    "fix": regex.compile(
        r"""(?ix)
        \b(?:fixed|fixes|the\ fix|fix\ (?:is|was)|root\ cause|caused\ by|the\ (?:problem|issue|bug)\ (?:is|was)
           |resolved|workaround|turns\ out)\b
        | 修复 | 修好 | 解决了 | 根本原因 | 原因是 | 问题在于 | 问题是 | 绕过
        """),
}
DECISION_KINDS = tuple(_DECISION_CUES)
"""Kinds of remembered facts a text can state, in a fixed order."""

_PATH = regex.compile(
    r"""(?x)
    (?<![\w/.])(?:~|\.{1,2})?/[\w.@-]+(?:/[\w.@-]+)*   # /abs/path, ./x, ~/p
    | (?<![\w/.])[\w.@-]+(?:/[\w.@-]+){2,}               # a/b/c
    | (?<![\w/.])[\w.@-]+/[\w@-]+\.\w+                   # dir/file.ext
    | \b[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|mjs|go|rs|java|kt|swift|c|h|cc|cpp|hpp|cs|rb|php|sh|sql|md|json
                 |ya?ml|toml|ini|cfg|lock|html|css|scss|vue|svelte|txt|env|proto|gradle|xml)\b
    """)


def decision_kinds(text: str) -> tuple[str, ...]:
    """Which of DECISION_KINDS `text` states (English and Chinese cues), in DECISION_KINDS order."""
    return tuple(kind for kind, cue in _DECISION_CUES.items() if cue.search(text))


def mentions_path(text: str) -> bool:
    """`text` names a file or directory (`src/app.py`, `./x/y`, `config.toml`)."""
    return _PATH.search(text) is not None
