"""The saving rule of lossy cuts (`StageContext.lossy`, `compress.stagekit.lossy.accept`): a cut is
kept only when its marker, with the original's real CCR key, holds fewer tokens than the original."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers, format_marker
from compress.config import CompressConfig
from compress.stagekit.lossy import accept
from compress.stagekit.stage import PendingOriginals, StageContext
from compress.tiers import Tier
from compress.token_counters import estimate_tokens

WORDS = "word " * 28
"""An original whose estimate (25 tokens) lies between the marker's with an all-zero key (24:
the estimator charges digits, less for each run of three) and with its real key (28-35): the
check on a placeholder key kept cuts that made the text larger (`tests/test_pipeline.py` saw a
request go from 73 to 75 tokens)."""


def _ctx() -> StageContext:
    return StageContext(CompressConfig(), Tier.ALWAYS, 0, (True,), PendingOriginals(), estimate_tokens)


def _marker(key: str) -> str:
    return format_marker("cut", key)


def test_a_cut_whose_real_marker_is_larger_keeps_the_original():
    ctx = _ctx()
    assert estimate_tokens(_marker("0" * 32)) < estimate_tokens(WORDS)
    assert ctx.lossy(WORDS, _marker, relative=False, min_chars=0) == WORDS
    assert accept(ctx, WORDS, _marker) == WORDS
    assert not ctx.originals.entries  # nothing stored for a cut not taken


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=300), st.text(max_size=20))
def test_a_cut_never_holds_more_tokens_than_its_original(text, kept):
    ctx = _ctx()
    for out in (ctx.lossy(text, lambda key: kept + _marker(key), relative=False, min_chars=0),
                accept(ctx, text, lambda key: kept + _marker(key))):
        assert estimate_tokens(out) <= estimate_tokens(text)
        if out != text:  # a cut: its marker names the original, stored under that key
            (marker,) = [m for m in find_markers(out) if m.key in ctx.originals.entries]
            assert ctx.originals.entries[marker.key][0] == text
