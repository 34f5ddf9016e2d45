"""Statements and chatter: which sentences a checkpoint records (the stages never read this).

A sentence states a decision, a constraint or a next step when it holds a cue of `cues` (or
one of the finer cues here, English, Chinese and a few Japanese) and is not chatter (the agent
announcing what it will look at next), a question or an offer, a negated or pending decision,
or a pointer ending in ':'. Also: the person's acceptance of a proposal, and the agent's
proposals. Linear-time patterns only.
"""

from __future__ import annotations

import regex

from compress.vocab.signals.cues import has_cue

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
    if not (has_cue(sentence, "decision") or _MORE_DECISION.search(sentence)):
        return False
    if is_chatter(sentence) or is_question(sentence) or _NOT_DECIDED.search(sentence):
        return False
    if _CODE_SPAN.sub("", sentence).rstrip().endswith((":", "：")):
        return False
    if _WEAK_DECISION.search(sentence):
        rest = _WEAK_DECISION.sub(" ", sentence)
        return bool(has_cue(rest, "decision") or _MORE_DECISION.search(rest) or _AGENTIVE.search(sentence))
    return True


def states_constraint(sentence: str, role: str) -> bool:
    """What the person requires (not asked as a question, not hedged, not a pasted document's
    bold label), or a limit the agent states."""
    if role == "user":
        if not (has_cue(sentence, "constraint") or _MORE_CONSTRAINT.search(sentence)):
            return False
        asked = is_question(sentence) and not _FIRM.search(sentence)
        return not asked and not _HEDGE.search(sentence) and ":**" not in sentence
    return _LIMIT.search(sentence) is not None and not is_chatter(sentence) and not is_question(sentence)


def states_next_step(sentence: str) -> bool:
    """What the agent says is left or offers to do next ("Next steps:" headers excepted: their
    list items are the steps)."""
    if sentence.endswith((":", "：")):
        return False
    return has_cue(sentence, "next_step") or (is_question(sentence) and not is_chatter(sentence))


def introduces_steps(line: str) -> bool:
    """A line ending in ':' that introduces next steps ("Next steps:", "the follow-up I'd run:")."""
    line = line.strip()
    return line.endswith((":", "：")) and bool(has_cue(line, "next_step") or is_question(line)
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
