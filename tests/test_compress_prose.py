"""compress_prose: condensing old assistant prose (English and Chinese), CCR, idempotence, golden."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.runner.pipeline import run
from compress.stagekit.stage import PendingOriginals, StageContext
from compress.stages.compress_prose import condense, shorten, split_sentences
from compress.state.session import Session
from compress.tiers import Tier, TierThresholds
from compress.token_counters import estimate_tokens

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

FILLER_EN = ["Sure, let me take a look at this for you.", "I think this is a really nice approach overall.",
             "Thanks for the patience while I went through everything.", "Okay, that all looks good to me.",
             "Let me know if anything else comes up."]
FILLER_ZH = ["好的，我来看看这个问题。", "整体来说看起来不错！", "感谢你的耐心等待。", "如果还有其他问题请告诉我？"]
CODE = "```python\ndef f(x):\n\n    return x  # keep me\n```"

ENGLISH = f"""## Result

{' '.join(FILLER_EN)} We decided to use SQLite instead of Postgres. {' '.join(FILLER_EN)}

- the cache lives in ~/.cache/ctxmill
- tests pass

{CODE}

{' '.join(FILLER_EN)} The error was a missing import in src/app.py. {' '.join(FILLER_EN)}"""

ZH = "".join(FILLER_ZH * 2)
CHINESE = f"""{ZH}我们决定改用 SQLite。{ZH}
{ZH}不要修改 config.toml。{ZH}
这说明问题可能是：
1、数据库连接失败
2、配置写错了
{ZH}"""


def context(**config) -> StageContext:
    return StageContext(CompressConfig(**config), Tier.MEDIUM, 0, (True,), PendingOriginals(), estimate_tokens)


def test_english_keeps_structure_and_key_sentences_and_drops_filler():
    ctx = context()
    out = shorten(ENGLISH, ctx)
    assert len(out) <= 0.6 * len(ENGLISH)
    for kept in ("## Result", "We decided to use SQLite instead of Postgres.", "- the cache lives in ~/.cache/ctxmill",
                 "- tests pass", CODE, "The error was a missing import in src/app.py."):
        assert kept in out
    assert not any(f in out for f in FILLER_EN)
    [marker] = find_markers(out)
    assert "1 heading, 2 list items, 1 code block, 2 key sentences" in marker.summary
    assert ctx.originals.entries[marker.key][0] == ENGLISH


def test_chinese_sentences_split_on_chinese_punctuation():
    assert split_sentences("好的。我们决定改用 SQLite！为什么？不要这样；好") == [
        "好的。", "我们决定改用 SQLite！", "为什么？", "不要这样；", "好"]
    assert "".join(split_sentences("See src/app.py, e.g. now. Done")) == "See src/app.py, e.g. now. Done"
    assert len(CHINESE) > 500
    out = shorten(CHINESE, context())
    for kept in ("我们决定改用 SQLite。", "不要修改 config.toml。", "这说明问题可能是：", "1、数据库连接失败", "2、配置写错了"):
        assert kept in out
    assert not any(f in out for f in FILLER_ZH)
    assert len(find_markers(out)) == 1


def test_left_alone_when_short_or_not_worth_it():
    short = " ".join(FILLER_EN)
    assert len(short) < 500 and shorten(short, context()) is short
    dense = "\n".join(f"- step {i}: edit src/mod{i}.py" for i in range(60))  # nothing to drop
    assert shorten(dense, context()) is dense
    mostly_key = " ".join(f"We decided to keep module_{i} as is." for i in range(20)) + " " + FILLER_EN[0]
    assert shorten(mostly_key, context()) is mostly_key  # saves < 40%


def test_min_saving_option_and_idempotence():
    ctx = context()
    once = shorten(ENGLISH, ctx)
    assert shorten(once, ctx) is once
    assert shorten(ENGLISH, ctx, min_saving=0.95) is ENGLISH


def test_unclosed_fence_keeps_the_rest_verbatim():
    text = " ".join(FILLER_EN * 3) + "\n```\n" + "code line\n" * 5 + " ".join(FILLER_EN)
    c = condense(text)
    assert c.text.startswith("```\n") and c.text.endswith(" ".join(FILLER_EN))


def _body(assistant_text: str) -> dict:
    return {"model": "m", "system": "", "messages": [
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": [{"type": "text", "text": assistant_text}]},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": [{"type": "text", "text": assistant_text}]},
        {"role": "user", "content": "thanks"},
    ]}


MEDIUM = dict(tiers=TierThresholds(medium=1, high=10**9), protect_tail_tokens=0, protect_tail_turns=1)


def test_pipeline_condenses_only_old_assistant_text_and_commits_originals():
    store = CCRStore.in_memory()
    body = _body(ENGLISH)
    result = run(body, session=Session.memory(), store=store, config=CompressConfig(**MEDIUM))
    old, newest = result.body["messages"][1], result.body["messages"][3]
    assert newest is body["messages"][3]
    [marker] = find_markers(old["content"][0]["text"])
    assert store.get(marker.key).text == ENGLISH
    assert result.report.stages_saved["compress_prose"] > 0
    again = run(result.body, session=Session.memory(), store=store, config=CompressConfig(**MEDIUM))
    assert again.report.stages_saved["compress_prose"] == 0  # idempotent on its own output
    always = run(body, session=Session.memory(), store=store,
                 config=CompressConfig(**{**MEDIUM, "tiers": TierThresholds(medium=10**8, high=10**9)}))
    assert always.body is body  # the stage starts at medium tier


# -------------------------------------------------------------- properties

_filler = st.sampled_from(FILLER_EN + FILLER_ZH)
_pieces = st.one_of(
    _filler, _filler, _filler, _filler,
    st.sampled_from(["We decided to drop the cache.", "必须先运行测试。", "Fixed the bug in lib/x.py.", "Error: boom."]),
    st.sampled_from(["## Heading", "- item", "1. first", "| a | b |", "**Conclusion**"]),
    st.builds(lambda body: f"```\n{body}\n```", st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                                                             blacklist_characters="`~"), max_size=80)),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40),
)
prose = st.lists(st.tuples(_pieces, st.sampled_from([" ", " ", "\n", "\n\n", ""])), min_size=20, max_size=80).map(
    lambda items: "".join(p + sep for p, sep in items))


@settings(max_examples=200, deadline=None)
@given(prose)
@example("Sure, let me take a look at this for you. " * 17 + "```\n\n``` ```\n\n``````\n0\n``` ")  # not a fence: ``` ```
def test_property_never_larger_code_survives_deterministic_recoverable(text):
    ctx = context()
    out = shorten(text, ctx)
    assert len(out) <= len(text)
    assert out == shorten(text, context())
    for block in _fenced_blocks(text):
        assert block in out
    if out != text:
        assert len(out) <= 0.6 * len(text)
        [marker] = find_markers(out)
        assert ctx.originals.entries[marker.key][0] == text
        assert shorten(out, ctx) is out


# -------------------------------------------------------------- golden: real transcripts

def test_golden_on_claude_code_transcripts(corpus):
    from claude_code_requests import claude_code_sessions, session_messages

    root = corpus
    texts = [b["text"] for p in claude_code_sessions(root) for m in session_messages(p) if m["role"] == "assistant"
             for b in m["content"] if b.get("type") == "text" and len(b["text"]) > 500]
    assert texts, "no long assistant prose in the corpus"
    condensed = 0
    for text in texts:
        ctx = context()
        out = shorten(text, ctx)
        if out is text:
            continue
        condensed += 1
        assert len(out) <= 0.6 * len(text)
        lines = set(out.split("\n"))
        for line in text.split("\n"):
            if line.startswith("#") or re.match(r"\s*[-*] ", line):
                assert line in lines
        [marker] = find_markers(out)
        assert ctx.originals.entries[marker.key][0] == text
    assert condensed >= 1


def _fenced_blocks(text: str) -> list[str]:
    """Fenced code blocks as CommonMark reads them: an opener of 3+ backticks (its info string
    holds no backtick) or tildes, indented at most 3 spaces, up to a line of at least as many of
    the same character and nothing else, or to the end of the text when none comes."""
    blocks, opener = [], None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        stripped = line.lstrip(" ")
        if len(line) - len(stripped) > 3:
            continue
        run = len(stripped) - len(stripped.lstrip(stripped[:1])) if stripped[:1] in ("`", "~") else 0
        if opener is None and run >= 3 and not (stripped[0] == "`" and "`" in stripped[run:]):
            opener = (i, stripped[0], run)
        elif opener is not None and run >= opener[2] and stripped[0] == opener[1] and not stripped[run:].strip(" \t"):
            blocks.append("\n".join(lines[opener[0]:i + 1]))
            opener = None
    if opener is not None:  # an unclosed fence runs to the end of the text
        blocks.append("\n".join(lines[opener[0]:]).rstrip())
    return blocks
