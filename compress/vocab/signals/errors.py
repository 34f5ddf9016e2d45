"""Errors in tool output, in English and Chinese: error lines, failed results, JSON error items.

Shared by the stages that must keep errors visible (trim_outputs, crush_json, purge_errors),
compress_prose, the replay's retention check and the checkpoint's gotchas, so "an error line"
means the same thing everywhere. `error_line_numbers` must accept exactly the lines
`is_error_line` accepts (it only scans faster: `_TRIGGERS` must stay in step with
`_ERROR_WORDS`). `telling_error_line` picks the line of a failed result a reader needs.
Linear-time patterns only.
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

_UNTELLING = regex.compile(
    r'(?i)^(?:\W*exit (?:code|status) \d+\W*|traceback \(most recent call last\):?|file ".*", line \d+.*)$')
"""Error lines that say nothing about the error itself."""
_FAILED_START = regex.compile(
    r"(?i)^\s*(?:<tool_use_error>|error\b|error:|fatal:|exception|traceback|exit code [1-9]|command failed|错误|失败)")
SCRIPT_FAILED = "Script error:"
"""How Codex code mode's `exec` answers a program that threw (exactly; Godot prints `SCRIPT ERROR:`
lines in output that did not fail)."""
_FAILED_STATUS = regex.compile(r"(?m)^(?:Process exited with code|Exit code:) -?[1-9]\d*\s*$")
"""A non-zero exit status in the header lines of a Codex result (exec_command and shell:
`Command: …`, `Chunk ID: …`, `Wall time: …`, `Process exited with code 1`, then `Output:`;
apply_patch: `Exit code: 1`)."""
_HEADER_CHARS = 600


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
    """The first line of `text` that looks like an error, stripped; None if there is none.
    Linear like `error_line_numbers` (a search of the whole text with the pattern takes ~40 ms
    on a 3,000-line build log)."""
    numbers = error_line_numbers(text)
    if not numbers:
        return None
    start = 0
    for _ in range(numbers[0]):
        start = text.index("\n", start) + 1
    end = text.find("\n", start)
    return text[start:end if end >= 0 else len(text)].strip()


_LITERAL_NEWLINE = regex.compile(r"(?:\\r)?\\n")
_EXCEPTION = regex.compile(
    r"(?i)^\s*(?:\*\*\s*)?\(?\b\w*(?:Error|Exception|Failure)\b\)?[:)]|^\s*Assertion\b|\bassert(?:ion)?\b.*\bfailed\b"
    r"|^\s*error(?:\[\w+\])?:|^\s*fatal:|^\s*FAILED\b|^\s*E\s{2,}\S")
"""Lines naming what went wrong: an exception, a failed assertion, a compiler's `error:`."""
_WARNING_LINE = regex.compile(r"(?i)^\s*(?:warning|warn|deprecat\w+)\b")
_HINT_LINE = regex.compile(r"(?i)^\s*(?:hint|note|help|tip):")


def result_lines(text: str) -> list[str]:
    """The stripped lines of a tool result; a line holding several literal `\\n` sequences (a
    result JSON-encoded twice) is split at them."""
    out = []
    for line in text.strip().split("\n"):
        if line.count("\\n") >= 2:
            out += [part.strip() for part in _LITERAL_NEWLINE.split(line)]
        else:
            out.append(line.strip())
    return out


def _telling(line: str) -> bool:
    return bool(line) and not _UNTELLING.match(line) and not _HINT_LINE.match(line)


def says_nothing(line: str) -> bool:
    """An error line that tells nothing but an exit code or a traceback header."""
    return not line or _UNTELLING.match(line) is not None


def telling_error_line(text: str) -> str:
    """The most telling line of a failed result: an exception or assertion line (for a Python
    traceback the last one), else the first error line that says more than "Exit code N", a
    traceback header or a hint (warnings after the rest), else the first line of three words or
    more. A line ending in ':' is joined with the next non-empty one. Literal `\\n` sequences
    count as line breaks."""
    lines = result_lines(text)
    exceptions = [i for i, line in enumerate(lines) if _telling(line) and _EXCEPTION.search(line)]
    found = [i for i in error_line_indexes(lines) if _telling(lines[i])]
    if "Traceback (most recent call last)" in text and exceptions:
        ranked = exceptions[-1:]
    else:
        ranked = exceptions[:1] + [i for i in found if not _WARNING_LINE.match(lines[i])] + found
    if not ranked:
        ranked = [i for i, line in enumerate(lines) if _telling(line) and len(line.split()) >= 3]
        ranked += [i for i, line in enumerate(lines) if _telling(line)]
    if not ranked:
        return lines[0] if lines else ""
    index = ranked[0]
    line = lines[index]
    if line.endswith(":"):
        after = next((lines[j] for j in range(index + 1, min(len(lines), index + 4)) if lines[j]), "")
        line = f"{line} {after}".strip()
    return line


def is_failed_result(block: Block) -> bool:
    """A tool_result that reports a failure: flagged `is_error`, or (providers without the
    flag) text that opens like an error report or whose header reports a non-zero exit status."""
    if block.is_error:
        return True
    head = block.result_text[:_HEADER_CHARS]
    return (_FAILED_START.match(head[:300]) is not None or head.startswith(SCRIPT_FAILED)
            or ("xit" in head and _FAILED_STATUS.search(head.split("\nOutput:", 1)[0]) is not None))


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
