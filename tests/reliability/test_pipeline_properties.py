"""Properties of the whole pipeline on any request: never raises, keeps the protocol, shrinks,
is deterministic and idempotent, and every marker resolves through CCR."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import from_provider
from compress.model import TOOL_RESULT, TOOL_USE
from compress.runner.pipeline import run
from compress.state.session import Session
from compress.tiers import TierThresholds
from ground.jsonbytes import dumps
from tests.helpers import strings
from tests.strategies import wild_requests

CONFIGS = {
    tier: CompressConfig(protect_tail_tokens=0, protect_tail_turns=1, min_saving_chars=20,
                         tiers=TierThresholds(medium=medium, high=high))
    for tier, medium, high in (("always", 10**9, 10**9), ("medium", 1, 10**9), ("high", 1, 1))
}
_A, _B = "first line of the file shown here " * 8, "second line of the file shown here " * 8
REMINDER_BETWEEN_ECHOED_LINES = {"model": "claude-sonnet-4-5", "messages": [
    {"role": "user", "content": "find"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Grep",
                                       "input": {"pattern": "line", "content": f"{_A}\n\n{_B}"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content":
                                  f"{_A}\n<system-reminder>{'Remember the todo list. ' * 10}</system-reminder>\n{_B}"}]},
    {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]}
"""A Grep whose reminder, once removed, leaves lines its input holds: the second pass found them
as an echo and cut them (not idempotent) until a result with a ctxmill marker was left alone."""
PROPERTY_SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def calls(body: dict) -> list[tuple[str, str, str]]:
    return [(b.kind, b.tool_id, b.tool_name) for m in from_provider(body).messages for b in m.blocks
            if b.kind in (TOOL_USE, TOOL_RESULT)]


def once(body: dict, config: CompressConfig, store: CCRStore | None = None):
    return run(body, session=Session.memory(), store=store or CCRStore.in_memory(), config=config)


@pytest.mark.parametrize("tier", sorted(CONFIGS))
@PROPERTY_SETTINGS
@given(body=wild_requests)
@example(body={"model": "gpt-4o", "messages": [{"role": "system", "content": ""}, {"role": "user", "content": "FIXES"}]})
@example(body=REMINDER_BETWEEN_ECHOED_LINES)
def test_any_request_keeps_every_invariant(tier, body):
    config = CONFIGS[tier]
    before = dumps(body)
    store = CCRStore.in_memory()
    result = once(body, config, store)
    report = result.report
    assert report.error == "" and report.errors == [], (report.error, report.errors)
    assert dumps(body) == before, "the input body was mutated"
    out = dumps(result.body)
    assert json.loads(out) == json.loads(before) if result.body is body else json.loads(out)  # valid JSON
    assert calls(result.body) == calls(body)  # every tool call still paired with its result, same ids
    # Never larger than raw, a reminder included (nudges appends one only when it fits under raw)
    assert report.tokens_after <= report.tokens_before, (report.tokens_before, report.tokens_after, report.stages_saved)
    assert dumps(once(body, config).body) == out  # deterministic
    given_keys = {m.key for s in strings(body) for m in find_markers(s)}  # look-alikes in the input
    for marker in (m for s in strings(result.body) for m in find_markers(s) if m.key not in given_keys):
        assert store.get(marker.key).ok, marker  # CCR round trip: every new marker resolves
    again = once(result.body, config)
    assert dumps(again.body) == out and again.report.ccr_written == 0  # idempotent
