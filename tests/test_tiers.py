from __future__ import annotations

import pytest

from compress.tiers import Tier, TierThresholds, thresholds_for


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
