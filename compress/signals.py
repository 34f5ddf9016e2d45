"""What looks like an error in tool output, in English and Chinese. Linear-time patterns only.

Shared by the stages that must keep errors visible (trim_outputs, crush_json, purge_errors)
and by the replay's retention check, so "an error line" means the same thing everywhere.
"""

from __future__ import annotations

import regex

from compress.model import Block

_ERROR_WORDS = regex.compile(
    r"""(?ix)
    \b(?:error|errors|exception|traceback|failed|failure|failures|fatal|panic(?:ked)?|segmentation\ fault
       |assertionerror|cannot|can't|could\ not|unable\ to|not\ found|no\ such\ file|permission\ denied
       |denied|refused|timed?\ ?out|undefined|unresolved|errno|exit\ (?:code|status)\ [1-9]\d*
       |non-zero\ exit|warning|deprecated|critical)\b
    | 错误 | 失败 | 异常 | 报错 | 无法 | 找不到 | 未找到 | 超时 | 拒绝 | 崩溃 | 警告
    | ^\s*E\s{2,}\S            # pytest failure lines
    | ^\s*File\ ".*",\ line\ \d+  # Python traceback frames
    | ^\s*at\ [\w.$<>]+\(      # Java/JS stack frames
    | <tool_use_error>
    """,
    regex.MULTILINE,
)

_FAILED_START = regex.compile(
    r"(?i)^\s*(?:<tool_use_error>|error\b|error:|fatal:|exception|traceback|exit code [1-9]|command failed|错误|失败)")


def is_error_line(line: str) -> bool:
    return _ERROR_WORDS.search(line) is not None


def error_line_indexes(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if _ERROR_WORDS.search(line)]


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
