from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.tiers import Tier, TierThresholds, known_window, thresholds_for


def test_absolute_thresholds():
    t = TierThresholds()
    assert [t.tier_for(n) for n in (0, 49_999, 50_000, 149_999, 150_000)] == [
        Tier.ALWAYS, Tier.ALWAYS, Tier.MEDIUM, Tier.MEDIUM, Tier.HIGH]


def test_model_override_longest_prefix_wins():
    small = TierThresholds(10_000, 20_000)
    smaller = TierThresholds(1_000, 2_000)
    overrides = {"gpt-4": small, "gpt-4o-mini": smaller}
    assert thresholds_for("gpt-4o-mini-2024", TierThresholds(), overrides) is smaller
    assert thresholds_for("gpt-4o", TierThresholds(), overrides) is small
    assert thresholds_for("claude", TierThresholds(), overrides) == TierThresholds()


def test_invalid_thresholds_and_names():
    with pytest.raises(ValueError):
        TierThresholds(200, 100)
    with pytest.raises(ValueError):
        Tier.parse("extreme")
    assert Tier.parse(" High ") is Tier.HIGH


def test_a_known_model_window_scales_the_thresholds_unless_the_caller_says_another():
    """Codex's GPT-5 models read 272K tokens: high starts at 204K, not 150K; medium stays at 50K."""
    assert known_window("gpt-5.3-codex") == known_window("gpt-5") == known_window("gpt-6.2-astra") == 272_000
    assert known_window("gpt-6.2-sol") == known_window("openai/gpt-6.1-terra") == 500_000  # Codex 0.171's catalogue
    assert known_window("claude-opus-4-6") is None and known_window("gpt-4o") is None
    # Codex records the window it uses, 95% of the model's: 258,400 for the GPT-5.3-5.5 recordings
    # of the corpus (272K), 353,400 for a GPT-5.6 recording (372K)
    assert known_window("gpt-5.4") == known_window("gpt-5.5") == 272_000
    assert known_window("gpt-5.6") == known_window("gpt-5.6-codex") == known_window("openai/gpt-5.6-mini") == 372_000
    t = TierThresholds()
    assert thresholds_for("gpt-5.4", t, {}) == TierThresholds(50_000, 204_000)
    assert thresholds_for("gpt-5.4", t, {}, window=1_000_000) == TierThresholds(50_000, 750_000)
    assert thresholds_for("claude-sonnet-4-6", t, {}) is t
    override = TierThresholds(10_000, 20_000)
    assert thresholds_for("gpt-5.4", t, {"gpt-5": override}) is override


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-opus-4-7", "claude-sonnet-5-5-20260901",
                                   "us.anthropic.claude-opus-5-5-v1:0", "anthropic/claude-fable-5-1",
                                   "Claude-Haiku-5-5"])
def test_claude_models_that_read_a_million_tokens_natively_scale_the_tiers(model):
    """Claude Code 2.1.332 runs Opus 5.5 by default, whose 1M window needs no `context-1m` beta:
    at 200K reference tiers the engine would force an epoch at 150K, far from compaction."""
    assert known_window(model) == 1_000_000
    assert thresholds_for(model, TierThresholds(), {}) == TierThresholds(50_000, 750_000)


@pytest.mark.parametrize("model", ["claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-haiku-4-5",
                                   "anthropic/claude-opus-4-1"])
def test_older_claude_models_keep_the_reference_window(model):
    assert known_window(model) is None
    assert thresholds_for(model, TierThresholds(), {}) == TierThresholds()



@pytest.mark.parametrize(("model", "window"), [
    # dated snapshots and variants keep their family's window
    ("claude-opus-4-7-20260416", 1_000_000), ("claude-fable-5-2", 1_000_000), ("claude-sonnet-5-5", 1_000_000),
    ("claude-haiku-5-5-20261001", 1_000_000), ("claude-mythos-5-1", 1_000_000),
    ("gpt-5.4-2026-03-05", 272_000), ("gpt-5.5", 272_000), ("gpt-5.3-codex-spark", 272_000),
    ("gpt-5.6-sol", 372_000), ("gpt-5.6-terra", 372_000), ("gpt-5.6-luna", 372_000),
    ("openai/gpt-5.6-sol-fast", 372_000), ("openai.gpt-5.6-sol", 372_000),  # a gateway's route, Bedrock's id
    ("gpt-6.2-sol", 500_000),
    # Claude Code's `[1m]` suffix asks for 1M on a model whose default is 200K
    ("claude-opus-4-6[1m]", 1_000_000), ("claude-sonnet-4-5-20250929[1m]", 1_000_000),
    ("anthropic/claude-sonnet-4-6[1M]", 1_000_000),
    # unknown models: no window, the reference thresholds
    ("claude-opus-4-6", None), ("gpt-4o", None), ("my-local-model", None),
])
def test_model_ids_as_clients_send_them_resolve_to_their_window(model, window):
    assert known_window(model) == window


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**6), st.integers(0, 10**6), st.integers(1, 10**7))
def test_a_window_scales_high_only_and_medium_never_passes_it(medium, extra, window):
    """High (the host compacts soon) scales with the window; medium (cost cuts pay) is a count of
    tokens, absolute, lowered only to stay at or below high in a small window."""
    t = TierThresholds(medium, medium + extra)
    scaled = t.for_window(window)
    assert scaled.high == max(1, round(t.high * window / 200_000))
    assert scaled.medium == min(t.medium, scaled.high)
