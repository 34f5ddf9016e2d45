"""Cues in prose, in English and Chinese: decision, constraint, fix, next step, critical note.

One set of patterns for compress_prose, the nudges and the checkpoint, so "a decision" means the
same thing in a stage and in memory. The stages read only DECISION_KINDS (`decision_kinds`);
the checkpoint's finer reading of a sentence is in `statements`. Also whether a text names a
file (`mentions_path`), which compress_prose keeps like a cue. Linear-time patterns only.
"""

from __future__ import annotations

import regex

_CUES = {
    "decision": regex.compile(
        r"""(?ix)
        \b(?:decided|decide\ to|decision|we(?:'ll|\ will|\ are\ going\ to)
           |i(?:'ll|\ will)\ (?:use|switch|go\ with|keep)|instead\ of|rather\ than|switch(?:ed)?\ to|chose|choose
           |opted|going\ with|let's\ (?:use|go\ with|switch)|plan\ is|settled\ on|prefer)\b
        | 决定 | 改为 | 改用 | 采用 | 选择 | 而不是 | 换成 | 方案是 | 就用 | 统一用
        """),
    "constraint": regex.compile(
        r"""(?ix)
        \b(?:must(?:\ not|n't)?|never|always|do\ not|don't|should\ not|shouldn't|requirement|required?
           |constraint|only\ use|not\ allowed|forbidden|make\ sure|no\ more\ than|at\ most|at\ least|avoid)\b
        | 必须 | 不要 | 不能 | 不可 | 禁止 | 务必 | 一定要 | 只能 | 不允许 | 切勿 | 不得 | 至少 | 最多 | 避免
        """),
    "fix": regex.compile(
        r"""(?ix)
        \b(?:fixed|fixes|the\ fix|fix\ (?:is|was)|root\ cause|caused\ by|the\ (?:problem|issue|bug)\ (?:is|was)
           |resolved|workaround|turns\ out)\b
        | 修复 | 修好 | 解决了 | 根本原因 | 原因是 | 问题在于 | 问题是 | 绕过
        """),
    "next_step": regex.compile(
        r"""(?ix)
        \b(?:next\ steps?|next,|todo|to\ do|remaining|still\ (?:need|needs|have|to)|follow[-\ ]up|not\ yet
           |left\ to|pending|then\ we|after\ that|want\ me\ to|would\ you\ like|let\ me\ know\ when|worth\ doing
           |needs\ you|filed|for\ later|before\ sharing)\b
        | 下一步 | 接下来 | 待办 | 还需要 | 剩下 | 尚未 | 后续 | 完成后 | 需要你
        """),
    "critical": regex.compile(
        r"""(?ix)
        \b(?:important|critical|careful|warning|note\ that|beware|gotcha|caveat|do\ not\ forget|remember)\b
        | 注意 | 重要 | 关键 | 小心 | 切记 | 记住
        """),
}
CUE_KINDS = tuple(_CUES)
"""Kinds of cue a sentence can hold, in a fixed order."""
DECISION_KINDS = ("decision", "constraint", "fix")
"""Kinds of remembered facts a text can state (decision, constraint, fix), in a fixed order."""
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
    return tuple(kind for kind in DECISION_KINDS if _CUES[kind].search(text))


def has_cue(text: str, kind: str) -> bool:
    """`text` holds a cue of `kind` (one of CUE_KINDS)."""
    return _CUES[kind].search(text) is not None


def mentions_path(text: str) -> bool:
    """`text` names a file or directory (`src/app.py`, `./x/y`, `config.toml`)."""
    return _PATH.search(text) is not None
