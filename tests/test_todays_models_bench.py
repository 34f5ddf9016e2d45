"""bench/todays_models.py: its ablation prices the engine's decisions as another model, and only
inside the block."""

import compress.runner.pipeline as pipeline
from bench.todays_models import engine_prices_as


def test_the_engine_decides_at_the_named_models_prices_inside_the_block_only():
    def read_price() -> float:
        return pipeline.cache_life("anthropic", None, "auto", "claude-opus-5-5").read_price

    assert read_price() == 0.05
    with engine_prices_as("claude-opus-4-6"):
        assert read_price() == 0.1
    assert read_price() == 0.05
