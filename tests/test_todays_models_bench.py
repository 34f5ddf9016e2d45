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


def test_dearest_on_the_way_is_the_highest_share_of_raws_cost_so_far_and_its_request():
    from bench.todays_models import dearest_on_the_way
    from replay.runner import ReplayReport

    report = ReplayReport("s.jsonl", "request", "anthropic", "o200k")
    report.raw.costs = [10.0, 10.0, 10.0, 10.0]
    report.compressed.costs = [10.0, 20.0, 1.0, 1.0]  # so far: 1.0, 1.5, 31/30, 0.8
    report.cap.costs = [5.0, 5.0, 5.0, 5.0]
    assert dearest_on_the_way(report, "ctxmill") == (1.5, 2)
    assert dearest_on_the_way(report, "cap") == (0.5, 4)  # ties go to the later request


def test_a_replay_records_each_requests_cost_on_every_side():
    import json

    from compress.formats.sessions import read_text
    from replay.runner import replay

    log = "\n".join(f"compiling module {i} of 400 ... ok" for i in range(400))
    messages: list[dict] = [{"role": "user", "content": "build it"}]
    for i in range(4):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"b{i}", "name": "Bash",
                                                        "input": {"command": f"make {i}"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"b{i}", "content": log}]}]
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "built"}]})
    report = replay(read_text(json.dumps({"messages": messages}), "request"))
    for name, side in report.sides().items():
        assert len(side.costs) == report.requests > 1, name
        assert round(sum(side.costs), 1) == side.cost, name
    assert report.compressed.costs != report.raw.costs  # the logs are cut: the requests differ
