"""The prompt-cache cost model and compaction counting on hand-computed examples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.provider_cache import READ_PRICE, WRITE_PRICE
from replay.costmodel import (
    ANTHROPIC,
    ANTHROPIC_1H,
    HOST_200K,
    CacheCost,
    Compaction,
    PromptCache,
    compaction_events,
    head_cost,
    prices_for,
)


def test_prices_are_anthropic_multipliers():
    assert CacheCost(read=100, write=10).cost() == 100 * 0.1 + 10 * 1.25
    assert (READ_PRICE, WRITE_PRICE) == (0.1, 1.25)


def test_an_unseen_head_is_written_first_and_again_after_it_expired_else_read():
    """The system prompt and tools a recording lacks cost the same on every side: written by the
    first request and by one that finds it expired (5 minutes unused), read otherwise."""
    times = [0.0, 100.0, 500.0, 600.0]
    assert head_cost(1_000, times, ANTHROPIC) == pytest.approx(1_000 * (1.25 + 0.1 + 1.25 + 0.1))
    assert head_cost(1_000, times, ANTHROPIC_1H) == pytest.approx(1_000 * (2.0 + 0.1 + 0.1 + 0.1))
    assert head_cost(1_000, [None, None], ANTHROPIC) == pytest.approx(1_000 * (1.25 + 0.1))


def test_growing_request_reads_its_predecessor_and_writes_the_rest():
    cache = PromptCache()
    assert cache.add([1, 2], [10, 20]) == CacheCost(read=0, write=30)
    second = cache.add([1, 2, 3], [10, 20, 30])
    assert second == CacheCost(read=30, write=30, read_blocks=2)
    assert second.cost() == 0.1 * 30 + 1.25 * 30


def test_longest_prefix_wins():
    cache = PromptCache()
    cache.add([1], [5])
    cache.add([1, 2], [5, 7])
    assert cache.add([1, 2, 3], [5, 7, 9]) == CacheCost(read=12, write=9, read_blocks=2)


def test_changed_early_block_breaks_the_prefix():
    cache = PromptCache()
    cache.add([1, 2, 3], [10, 10, 10])
    assert cache.add([9, 2, 3, 4], [10, 10, 10, 10]) == CacheCost(read=0, write=40)


def test_a_cache_of_any_prefix_reads_up_to_the_first_changed_block():
    """OpenAI before GPT-5.6 caches every prefix of a prompt it processed: a request that
    changes the third block reads the first two, though no earlier request ended there."""
    ends_only, any_prefix = PromptCache(None), PromptCache(None, any_prefix=True)
    for cache in (ends_only, any_prefix):
        cache.add([1, 2, 3, 4], [10, 20, 30, 40])
    assert ends_only.add([1, 2, 9, 4], [10, 20, 30, 40]) == CacheCost(read=0, write=100)
    assert any_prefix.add([1, 2, 9, 4], [10, 20, 30, 40]) == CacheCost(read=30, write=70, read_blocks=2)
    assert prices_for("openai", "gpt-5.1-codex").any_prefix and not prices_for("openai", "gpt-6.2-sol").any_prefix
    assert not prices_for("anthropic", "claude-sonnet-4-5").any_prefix


def test_lookback_is_twenty_blocks():
    cache = PromptCache()
    cache.add([0], [100])
    # 1 + 19 new blocks: the earlier request's last block is among the last 20 -> hit
    assert cache.add(list(range(20)), [100] + [1] * 19).read == 100
    other = PromptCache()
    other.add([0], [100])
    # 1 + 20 new blocks: it ends before the last 20 -> no hit
    assert other.add(list(range(21)), [100] + [1] * 20) == CacheCost(read=0, write=120)


def test_head_is_written_once_then_read():
    cache = PromptCache()
    assert cache.add([1], [10], head_key="sys", head_tokens=50) == CacheCost(read=0, write=60)
    assert cache.add([1, 2], [10, 5], head_key="sys", head_tokens=50) == CacheCost(read=60, write=5, read_blocks=1)
    assert cache.add([1, 2], [10, 5], head_key="other", head_tokens=7) == CacheCost(read=15, write=7, read_blocks=2)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 3), max_size=30), st.integers(0, 5)), min_size=1, max_size=12))
def test_every_token_is_read_or_written(requests):
    """Whatever the requests and the pauses between them (time only moves forward, as in any
    recording), each token is read or written once; a cache of every prefix reads at least what
    a cache of request ends reads, and never past the longest shared prefix."""
    ends, any_prefix = PromptCache(None, lifetime=3), PromptCache(None, lifetime=3, any_prefix=True)
    seen: list[list[int]] = []
    at = 0.0
    for keys, pause in requests:
        at += pause
        tokens = [k + 1 for k in keys]
        costs = [cache.add(keys, tokens, at=at) for cache in (ends, any_prefix)]
        for cost in costs:
            assert cost.read + cost.write == sum(tokens)
            assert cost.read >= 0 and cost.write >= 0
        shared = max((_common(keys, earlier) for earlier in seen), default=0)
        assert costs[0].read_blocks <= costs[1].read_blocks <= shared
        seen.append(keys)


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_a_prefix_unused_longer_than_its_lifetime_is_written_again():
    """Each read renews a cached prefix; once unused for the lifetime, request and head are gone."""
    cache = PromptCache(lifetime=300)
    assert cache.add([1], [10], "sys", 50, at=0.0) == CacheCost(read=0, write=60)
    assert cache.add([1, 2], [10, 5], "sys", 50, at=240.0).read == 60  # renewed at 240 s
    assert cache.add([1, 2, 3], [10, 5, 1], "sys", 50, at=480.0).read == 65  # 240 s after its last use
    assert cache.add([1, 2, 3, 4], [10, 5, 1, 1], "sys", 50, at=781.0) == CacheCost(read=0, write=67)


def test_without_a_lifetime_or_a_time_nothing_expires():
    for cache, times in ((PromptCache(), (0.0, 10_000.0)), (PromptCache(lifetime=300), (None, None)),
                         (PromptCache(lifetime=300), (0.0, None))):
        cache.add([1], [10], "sys", 50, at=times[0])
        assert cache.add([1, 2], [10, 5], "sys", 50, at=times[1]).read == 60


def test_the_recorded_lifetime_sets_the_write_price():
    assert (ANTHROPIC.write, ANTHROPIC.lifetime) == (1.25, 300)
    assert (ANTHROPIC_1H.write, ANTHROPIC_1H.lifetime) == (2.0, 3600)
    assert prices_for("openai", "gpt-5").lifetime is None


def test_compaction_resets_to_twenty_thousand():
    # crosses at 170K (then counts from 20K: offset 150K); 310K - 150K = 160K crosses again
    assert compaction_events([100_000, 170_000, 200_000, 310_000]) == 2
    assert compaction_events([100_000, 159_999]) == 0
    assert compaction_events([]) == 0


def test_a_host_compacts_at_four_fifths_of_its_models_window():
    """Claude Code compacted the corpus's sessions at 155K-180K tokens, Codex (GPT-5, 272K) at
    230K-236K."""
    assert Compaction.for_model("claude-opus-4-6") == HOST_200K == Compaction(160_000, 20_000)
    codex = Compaction.for_model("gpt-5.3-codex")
    assert codex == Compaction(217_600, 27_200)
    assert compaction_events([100_000, 200_000], codex) == 0 and compaction_events([100_000, 200_000]) == 1


def test_a_host_compacts_in_the_window_its_client_ran_with():
    """Codex compacts at 90% of the window it reports (258,400: 232.6K; the corpus's sessions at
    230K-236K); a Claude Code session on the 1M beta at four fifths of 1M, not at 160K."""
    assert Compaction.for_model("gpt-5.3-codex", 258_400, reported=True) == Compaction(232_560, 25_840)
    assert Compaction.for_model("claude-opus-4-6", 1_000_000) == Compaction(800_000, 100_000)
    assert Compaction.for_model("claude-opus-4-6", None) == HOST_200K


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 400_000), max_size=50), st.sampled_from(["claude-sonnet-4-6", "gpt-5.4"]))
def test_compactions_only_on_crossings(sizes, model):
    host = Compaction.for_model(model)
    events = compaction_events(sizes, host)
    assert events <= sum(1 for s in sizes if s >= host.at)
    assert (events > 0) == any(s >= host.at for s in sizes)


def test_a_gpt_6_request_above_272k_tokens_costs_twice_as_much():
    """GPT-6 models double their input and cache rates for a whole request over 272K input tokens."""
    from replay.costmodel import prices_for

    prices = prices_for("openai-responses", "gpt-6.2-sol")
    assert (prices.read, prices.write, prices.long_context_above) == (0.05, 1.25, 272_000)
    assert CacheCost(200_000, 72_000).cost(prices) == pytest.approx(0.05 * 200_000 + 1.25 * 72_000)
    assert CacheCost(200_000, 72_001).cost(prices) == pytest.approx(2 * (0.05 * 200_000 + 1.25 * 72_001))
    assert CacheCost(300_000, 0).cost(prices_for("openai-responses", "gpt-5.4")) == pytest.approx(30_000)
