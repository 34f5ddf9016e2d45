"""What text signals, in English and Chinese: errors, and what is worth remembering.

Errors (lines, failed results, JSON items) are shared by the stages that must keep them visible
(trim_outputs, crush_json, purge_errors), the replay's retention check and the checkpoint's
gotchas; cues (decision, constraint, fix, next step, critical) by compress_prose, the nudges and
the checkpoint extraction. So "an error line" or "a decision" means the same thing everywhere.
The stages read only DECISION_KINDS (`decision_kinds`); the checkpoint also tells a statement
from chatter (`states_decision`, `states_constraint`, `states_next_step`: more cues of its own,
announcements of what the agent will look at next, questions and offers, negated and pending
decisions), and picks the most telling line of a failed result (`telling_error_line`).
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


def unescape_newlines(text: str) -> str:
    """`text` with its literal `\\n` sequences written as line breaks when it holds several (a
    string JSON-encoded twice); other text unchanged."""
    return "\n".join(result_lines(text)) if text.count("\\n") >= 2 else text


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


# -- what is worth remembering in prose ------------------------------------------------------

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

# -- statements and chatter: the checkpoint only (the stages read DECISION_KINDS) ------------

_MORE_DECISION = regex.compile(
    r"""(?ix)
    \b(?:locked\ in|i'd\ (?:go\ with|leave|keep|use|pick)|the\ (?:right|better)\ (?:type|choice|approach|call)
       |recommend(?:ation|ed)?|the\ (?:easiest|simplest|cleanest|best|right|safest)\ (?:fix|way|approach|option)\ is
       |fix\ both\ by)\b
    | \b(?:i|we)(?:\ need\ to|'ll|\ will|\ should)\ (?:also\ )?(?:use|rewrite|switch|replace|import|move|keep|drop|wrap
       |disable|enable|configure|convert|cast|store|render|put|change|register|mark|pass)\b
    | ^need\ `
    | \breplac(?:e|es|ing)\b[^.!?]{1,60}?\bwith\b | \bmerg(?:e|es|ed|ing)\b[^.!?]{1,60}?\binto\b
    | 选用 | 选定 | 改成 | 改名为 | 共识 | 已确认 | 那么就 | 那就用 | 採用 | 方針 | 正解 | にします | ことにしま | 最良
    """)
"""Decision cues beyond the shared ones (a checkpoint lists these; compress_prose need not keep them)."""
_WEAK_DECISION = regex.compile(r"(?i)\b(?:instead\ of|rather\ than|prefer|recommend(?:ation|ed)?|decision"
                            r"|we(?:'ll|\ will|\ are\ going\ to))\b|而不是|选择(?!了)")
"""Cues that make a decision only with a choice made: "X rather than Y" also describes things."""
_AGENTIVE = regex.compile(
    r"""(?ix)
    \b(?:i|we)\ (?:decided|chose)\b|\blet's\b
    | \bi'd\ (?:go|use|leave|keep|pick|rather)\b
    | \b(?:use|using|switch|switching|replace|replacing|keep|keeping|move|moving|drop|dropping|remove|removing
       |rewrite|rewriting|add|adding|update|updating|change|changing|configure|configuring|wrap|wrapping|extract
       |extracting|store|storing|go\ with)\b
    | 改用 | 采用 | 改为 | 改成 | 换成 | 使用
    """)
_NOT_DECIDED = regex.compile(r"(?:没有|没|未|不|别)\s*(?:决定|改用|采用|选择|选用|选定|换成|改为|改成|改名为|就用|统一用)"
                             r"|(?:需要|待|要不要)\S{0,4}决定|你的决定|记为(?:已)?确认")
"""Decision words negated, still to be decided, or the person's to make."""
_MORE_CONSTRAINT = regex.compile(
    r"""(?ix)
    \b(?:isolated\ from|without|ask\ me|before\ you|have\ to|has\ to|should|shud|in\ both)\b
    | 防止 | 别(?=再|用|把|改|动|删|写|乱) | 只(?:推送|显示|读取|保留|写|用) | 不变 | 应当 | 应该 | 我希望
    | だけではな | 含めて | 必ず | しないで | ないでください
    """)
"""What the person requires beyond the shared constraint cues."""
_LIMIT = regex.compile(
    r"""(?ix)
    \b(?:doesn't|does\ not|don't|do\ not|won't|isn't|is\ not)\s+(?:support|allow|accept)\w*\b
    | \b(?:can't|cannot|can\ not)\s+(?:access|attach|support|be\ used|modify|alter)\b
    | \bnot\ supported\b | \bunsupported\b | \brequires?\ (?:a\ )?paid\b | \bwithout\ a\ default\b
    | \b(?:don't|do\ not|never)\s+(?:paste|commit|share|push|expose|log|print)\b
    | 不支持 | 不允许 | 必须
    """)
"""Limits the agent states: what a tool or service does not support, what must not be leaked."""
_CHATTER = regex.compile(
    r"""(?ix)
    ^(?:(?:now|first|next|then|ok(?:ay)?|good|great|perfect|alright|so|also|but|and)[,.!:—-]*\s+)*
    (?:let\ me|let's|i(?:'ll|\ will|'m\ going\ to|\ am\ going\ to|\ need\ to|\ want\ to)|i'm)\s+
    (?:(?:also|first|now|quickly|just|then)\s+)?
    (?:check|verify|look|see|read|re-?read|re-?test|test|run|re-?run|try|retry|search|explore|find|confirm|wait
       |take|get|start|continue|inspect|examine|investigate|understand|trace|figure|dig|review|double-check|grep
       |fetch|open|scan|view|compile|make\ sure|validate|debug|analy[sz]e|summari[sz]e|think|proceed)\b
    | \bin\ the\ next\ (?:edit|step|change|commit)s?\b
    | ^(?:让我|我来|我先|先|现在)\s*(?:检查|查看|看|确认|测试|读取|验证|试|找|排查|搜索|了解|分析)
    """)
"""The agent announcing what it will look at next: not a decision."""
_QUESTION = regex.compile(r"[?？]\s*$|(?i)\b(?:want\ me\ to|would\ you\ like|shall\ i|should\ i|say\ the\ word"
                          r"|if\ you'd\ (?:rather|prefer|like)|let\ me\ know)\b|要不要|需要我|是否需要")
_FIRM = regex.compile(r"(?i)不能|不要|必须|\b(?:don't|do\ not|must|never)\b")
_HEDGE = regex.compile(r"(?i)^(?:maybe|perhaps)\b|\bmight\b|也许|或许")
_CODE_SPAN = regex.compile(r"`[^`]*`")
_ACCEPTANCE = regex.compile(
    r"(?i)^\W*(?:我?(?:同意|接受)|这一点我接受|这符合我的理解|可以|好的?|行|没问题|yes|yep|ok(?:ay)?|sure|agreed?|sounds\ good"
    r"|go\ ahead|do\ it|lgtm|approved?)\b")
_PROPOSAL = regex.compile(r"(?i)建议|推荐|提案|\b(?:i\ (?:suggest|propose|recommend)|my\ (?:suggestion|recommendation|proposal))\b")
_BACK_REFERENCE = regex.compile(r"(?i)^(?:worth\ doing\ (?:that|this|it)|(?:do|doing)\ (?:that|this|it)|(?:that|this|it)\b)")


def is_chatter(sentence: str) -> bool:
    """The agent announcing what it will look at next ("Let me check …", "让我查看 …")."""
    return _CHATTER.search(sentence) is not None


def is_question(sentence: str) -> bool:
    """A question or an offer ("Want me to …?", "let me know", "要不要 …")."""
    return _QUESTION.search(sentence) is not None


def states_decision(sentence: str) -> bool:
    """A sentence stating a decision: a decision cue, not chatter, a question, a pointer ("…:"),
    a negated or pending decision; a weak cue ("rather than") needs an agent choosing."""
    if not (_CUES["decision"].search(sentence) or _MORE_DECISION.search(sentence)):
        return False
    if is_chatter(sentence) or is_question(sentence) or _NOT_DECIDED.search(sentence):
        return False
    if _CODE_SPAN.sub("", sentence).rstrip().endswith((":", "：")):
        return False
    if _WEAK_DECISION.search(sentence):
        rest = _WEAK_DECISION.sub(" ", sentence)
        return bool(_CUES["decision"].search(rest) or _MORE_DECISION.search(rest) or _AGENTIVE.search(sentence))
    return True


def states_constraint(sentence: str, role: str) -> bool:
    """What the person requires (not asked as a question, not hedged, not a pasted document's
    bold label), or a limit the agent states."""
    if role == "user":
        if not (_CUES["constraint"].search(sentence) or _MORE_CONSTRAINT.search(sentence)):
            return False
        asked = is_question(sentence) and not _FIRM.search(sentence)
        return not asked and not _HEDGE.search(sentence) and ":**" not in sentence
    return _LIMIT.search(sentence) is not None and not is_chatter(sentence) and not is_question(sentence)


def states_next_step(sentence: str) -> bool:
    """What the agent says is left or offers to do next ("Next steps:" headers excepted: their
    list items are the steps)."""
    if sentence.endswith((":", "：")):
        return False
    return _CUES["next_step"].search(sentence) is not None or (is_question(sentence) and not is_chatter(sentence))


def introduces_steps(line: str) -> bool:
    """A line ending in ':' that introduces next steps ("Next steps:", "the follow-up I'd run:")."""
    line = line.strip()
    return line.endswith((":", "：")) and bool(_CUES["next_step"].search(line) or is_question(line)
                                               or "follow" in line.lower())


def refers_back(sentence: str) -> bool:
    """A sentence that only makes sense with the one before ("Worth doing that before …")."""
    return _BACK_REFERENCE.match(sentence) is not None


def accepts(text: str) -> bool:
    """A short reply of the person accepting a proposal ("yes", "同意", "我接受")."""
    return len(text) < 200 and _ACCEPTANCE.search(text.strip()) is not None


def proposes(sentence: str) -> bool:
    """The agent proposing ("I suggest", "我建议", "推荐"): a decision once the person accepts."""
    return _PROPOSAL.search(sentence) is not None and not is_question(sentence)

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
