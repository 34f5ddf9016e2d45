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


def _lossy_as_before(ctx: StageContext, original: str, build, hint=None, relative=True, min_fraction=0.0,
                     min_chars=None) -> str:
    """`StageContext.lossy` as it was before it counted the original once (b745dd7), kept as the reference."""
    if not ctx.worth_it(original, build("0" * 32), relative, min_fraction, min_chars):
        return original
    form = ctx.originals.stored_form(original)
    text = build(form[1])
    if not ctx.worth_it(original, text, relative, min_fraction, min_chars):
        return original
    ctx.originals.put(original, hint, form)
    return text


class _Before(StageContext):
    def lossy(self, original, build, hint=None, relative=True, min_fraction=0.0, min_chars=None):  # type: ignore[no-untyped-def]
        return _lossy_as_before(self, original, build, hint, relative, min_fraction, min_chars)


def _digits_heavy(text: str) -> int:
    """A counter under which a key's digits decide (so the placeholder's and the key's verdicts differ)."""
    return len(text) // 8 + 3 * sum(c.isdigit() for c in text)


@settings(max_examples=400, deadline=None)
@given(st.text(min_size=1, max_size=400), st.text(max_size=60), st.sampled_from(["system-reminder", "note"]),
       st.booleans(), st.sampled_from([0.0, 0.3]), st.sampled_from([None, 0, 40, 100]),
       st.sampled_from([estimate_tokens, _digits_heavy]))
def test_lossy_decides_and_stores_as_before(text, kept, tag, relative, fraction, min_chars, count):
    """Counting the original once changes no decision, text or stored original: the previous
    implementation's output, for strip_injections' build (a reminder removed under a marker)
    and for builds that keep a part of the text, under the estimator and a digit-heavy counter."""
    from compress.stages.strip_injections import _shorten

    original = f"{text}\n<{tag}>{kept * 3}</{tag}>\n{kept}"
    for build in (lambda key: kept + _marker(key), lambda key: f"{text[:len(text) // 2]}\n{_marker(key)}"):
        ours, theirs = (StageContext(CompressConfig(), Tier.ALWAYS, 0, (True,), PendingOriginals(), count)
                        for _ in range(2))
        assert ours.lossy(original, build, "re-run", relative, fraction, min_chars) == \
            _lossy_as_before(theirs, original, build, "re-run", relative, fraction, min_chars)
        assert ours.originals.entries == theirs.originals.entries
    ours = StageContext(CompressConfig(), Tier.ALWAYS, 0, (True,), PendingOriginals(), count)
    theirs = _Before(CompressConfig(), Tier.ALWAYS, 0, (True,), PendingOriginals(), count)
    limit = 0 if min_chars is None else min_chars
    assert _shorten(original, (tag,), limit, ours) == _shorten(original, (tag,), limit, theirs)
    assert ours.originals.entries == theirs.originals.entries


def test_the_placeholder_still_rules_out_a_cut_the_real_key_would_let_through():
    """Both verdicts count: an original that a marker with its real key would undercut, but the
    one with the placeholder key does not, stays whole (as it did before), under a counter that
    charges digits heavily."""
    ctx = StageContext(CompressConfig(), Tier.ALWAYS, 0, (True,), PendingOriginals(), _digits_heavy)
    for n in range(1, 4000):
        original = "a" * n
        real = _marker(ctx.originals.stored_form(original)[1])
        if _digits_heavy(_marker("0" * 32)) >= _digits_heavy(original) > _digits_heavy(real):
            assert ctx.lossy(original, _marker, relative=False, min_chars=0) == original
            assert not ctx.originals.entries
            return
    raise AssertionError("no original between the two markers' counts")
