"""The runner: determinism, idempotence, protocol safety, fail-open, chain editing."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.formats.requests import SHAPES, from_provider
from compress.model import TEXT, TOOL_RESULT, TOOL_USE
from compress.runner.pipeline import Chain, run
from compress.stagekit.stage import Stage
from compress.state.session import Session
from compress.tiers import Tier, TierThresholds
from tests.helpers import READS_BY_AGE, SMALL_TAIL, as_bytes, compress, conversation_field, markers_in
from tests.strategies import requests

PROPS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _calls(body):
    request = from_provider(body)
    return [(b.kind, b.tool_id, b.tool_name) for m in request.messages for b in m.blocks
            if b.kind in (TOOL_USE, TOOL_RESULT)]


def _user_texts(body):
    request = from_provider(body)
    return [b.text for m in request.messages if m.role == "user" for b in m.blocks if b.kind == TEXT]


@PROPS
@given(requests)
def test_never_raises_keeps_pairing_ids_and_user_text(body):
    original = copy.deepcopy(body)
    result = compress(body)
    assert not result.report.error
    assert body == original  # the input is never mutated
    assert _calls(result.body) == _calls(original)
    assert _user_texts(result.body) == _user_texts(original)
    assert result.report.tokens_after <= result.report.tokens_before


LOW_TIERS = {tier: replace(SMALL_TAIL, tiers=TierThresholds(medium=1, high=high)) for tier, high in
             (("medium", 10**9), ("high", 1))}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests, st.sampled_from(sorted(LOW_TIERS)))
def test_no_request_of_a_session_is_sent_larger_than_raw(body, tier):
    """Fed request by request (each a prefix that ends where the model answered), every stage
    active (nudges' reminders, checkpoint reminders and pointers too), each request is sent at
    most as large as the client's, by the pipeline's own count, across incremental runs and epochs."""
    field = conversation_field(body)
    session, store = Session.memory(), CCRStore.in_memory()
    items = list(body[field])
    if items and items[0].get("role") == "user":  # a decision, so that nudges has a reminder to give
        items[0] = {**items[0], "content": "We decided to keep the old API. " + str(items[0].get("content"))}
    for end in range(1, len(items) + 1):
        prefix = {**body, field: items[:end]}
        if end < len(items) and from_provider({**body, field: items[:end + 1]}).messages[-1].role != "assistant":
            continue  # not a request end: the next item is no answer of the model
        report = compress(prefix, config=LOW_TIERS[tier], session=session, store=store).report
        assert not report.error
        assert report.tokens_after <= report.tokens_before, (end, report.stages_saved, report.decisions)


@PROPS
@given(requests)
def test_deterministic_and_idempotent(body):
    first = compress(body)
    second = compress(copy.deepcopy(body))
    assert as_bytes(first.body) == as_bytes(second.body)
    again = compress(first.body)
    assert as_bytes(again.body) == as_bytes(first.body)


@PROPS
@given(requests)
def test_every_marker_resolves_to_its_original(body):
    store = CCRStore.in_memory()
    result = compress(body, store=store)
    for marker in markers_in(result.body):
        lookup = store.get(marker.key)
        assert lookup.status == "ok"
        assert marker.summary  # says what was kept


@PROPS
@given(requests)
def test_latest_model_reply_keeps_its_thinking_text_and_calls(body):
    """In the latest turn's replies, thinking and text stay as sent, every call keeps its id and
    name, and a call's input changes only into a ctxmill note (`supersede_inputs`: an edit's
    replaced text, history at birth; a reply that carries thinking is echoed whole). Compared on
    the canonical messages, so every provider's shape is held to it (OpenAI Chat's `tool_calls`
    sit beside a string content)."""
    result = compress(body)
    request = from_provider(body)
    out = from_provider(result.body).messages
    field = SHAPES[request.provider].MESSAGES_FIELD
    latest = request.messages[-1].turn if request.messages else 0
    for i, msg in enumerate(request.messages):
        if msg.role != "assistant" or msg.turn != latest:
            continue
        if msg.has_thinking:
            assert result.body[field][i] == body[field][i]
            continue
        now = out[i]
        assert [b.kind for b in now.blocks] == [b.kind for b in msg.blocks]
        for before, after in zip(msg.blocks, now.blocks):
            if before.kind != TOOL_USE:
                assert (after.text, after.raw) == (before.text, before.raw)
                continue
            assert (after.tool_id, after.tool_name) == (before.tool_id, before.tool_name)
            if not isinstance(before.input, dict):
                assert after.input == before.input
                continue
            changed = {k: v for k, v in after.input.items() if before.input.get(k) != v}
            assert set(after.input) == set(before.input)
            assert all(isinstance(v, str) and "<<ctxmill:" in v for v in changed.values()), changed


def _reminder_session():
    reminder = "<system-reminder>" + "Keep the todo list current. " * 20 + "</system-reminder>"
    return {"system": "s", "messages": [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": "x"},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "built ok\n" + reminder}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Built."}]},
        {"role": "user", "content": "now test it"},
        {"role": "assistant", "content": [{"type": "text", "text": "Testing."}]},
    ]}


def test_first_stages_strip_old_reasoning_and_reminders_with_a_resolvable_marker():
    store = CCRStore.in_memory()
    body = _reminder_session()
    result = compress(body, store=store)
    out = result.body["messages"]
    assert [b["type"] for b in out[1]["content"]] == ["tool_use"]
    text = out[2]["content"][0]["content"]
    assert text.startswith("built ok\n[ctxmill: removed injected system-reminder · deep_expand(")
    (marker,) = find_markers(text)
    assert store.get(marker.key).text == body["messages"][2]["content"][0]["content"]
    assert result.report.stages_saved["strip_injections"] > 0
    assert result.report.ccr_written == 1


def test_protected_tail_keeps_recent_messages_whole():
    body = _reminder_session()
    result = run(body, session=Session.memory(), store=CCRStore.in_memory())  # default 4,000-token tail
    assert result.body == body


def test_the_protected_tail_stops_growing_at_protect_tail_blocks():
    from compress.config import CompressConfig

    def turn(i: int, output: str) -> list[dict]:
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read",
                                                   "input": {"file_path": f"/src/step{i}.txt"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}]}]

    log = "\n".join(f"line {j} of the file" for j in range(2_000))
    messages = [{"role": "user", "content": "build it"}, *turn(0, log)]
    for i in range(1, 7):  # six small turns: 12 blocks, far fewer than 4,000 tokens
        messages += turn(i, "ok")
    body = {"system": "s", "messages": messages}
    by_age = {"trim_outputs": READS_BY_AGE}  # the log read is cut once it leaves the tail
    by_blocks = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=CompressConfig(stage_options=by_age))
    assert markers_in(by_blocks.body["messages"][2]["content"][0]["content"])
    by_tokens = run(body, session=Session.memory(), store=CCRStore.in_memory(),
                    config=CompressConfig(protect_tail_blocks=0, stage_options=by_age))
    assert by_tokens.body["messages"][2] == body["messages"][2]  # the read is within the last 4,000 tokens


def test_unusable_input_passes_through_unchanged():
    for body in ({"messages": "nope"}, [], None, {"model": "x"}):
        result = run(body, session=Session.memory(), store=CCRStore.in_memory())
        assert result.body is body
        assert result.report.error and result.report.mode == "passthrough"


def test_deep_nesting_and_huge_results_do_not_raise():
    deep: object = "leaf"
    for _ in range(10_000):
        deep = [deep]
    body = {"messages": [{"role": "user", "content": "x"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {"v": deep}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "y" * 50_000_000}]},
                         {"role": "assistant", "content": "done"}]}
    result = compress(body)  # too deep to hash: the whole request passes through, nothing raises
    assert result.body is body
    assert "nested too deeply" in result.report.error


def test_lone_surrogates_and_unknown_blocks_survive():
    body = {"messages": [{"role": "user", "content": "bad \ud800 text"},
                         {"role": "assistant", "content": [{"type": "mystery", "x": 1}, {"type": "text", "text": "ok"}]},
                         {"role": "user", "content": "next"}, {"role": "assistant", "content": "done"}]}
    result = compress(body)
    assert not result.report.error
    assert result.body["messages"][0]["content"] == "bad \ud800 text"
    assert result.body["messages"][1]["content"][0] == {"type": "mystery", "x": 1}


def _raising(messages, ctx):
    raise RuntimeError("boom")


def _renaming(messages, ctx):
    out = list(messages)
    for i, msg in enumerate(messages):
        if ctx.mutable[i] and any(b.kind == TOOL_USE for b in msg.blocks):
            from dataclasses import replace
            out[i] = msg.with_blocks([replace(b, tool_name="Renamed") if b.kind == TOOL_USE else b for b in msg.blocks])
    return out


@pytest.mark.parametrize("fn, reason", [(_raising, "raised RuntimeError"), (_renaming, "tool ids or names")])
def test_a_misbehaving_stage_is_dropped_and_the_rest_runs(fn, reason):
    chain = Chain().before("strip_reasoning", Stage("bad", fn, Tier.ALWAYS))
    result = compress(_reminder_session(), chain=chain)
    assert any(reason in e for e in result.report.errors)
    assert result.report.stages_saved.get("strip_injections", 0) > 0
    assert _calls(result.body) == _calls(_reminder_session())


def test_chain_can_be_edited_by_name():
    chain = Chain()
    assert chain.names()[:4] == ["reread_pointers", "decide_on_arrival", "strip_reasoning", "strip_injections"]
    chain.disable("strip_injections")
    assert "strip_injections" not in [s.name for s in chain.active(Tier.HIGH, SMALL_TAIL)]
    chain.enable("strip_injections")
    extra = Stage("extra", lambda m, c: m, Tier.HIGH)
    chain.after("strip_reasoning", extra)
    assert chain.names()[3] == "extra"
    assert extra not in chain.active(Tier.MEDIUM, SMALL_TAIL)
    with pytest.raises(KeyError):
        chain.disable("nonexistent")


def test_reported_input_tokens_set_the_tier():
    result = compress(_reminder_session(), reported_input_tokens=160_000)
    assert result.report.tier == "high"


def test_an_expired_original_says_which_call_to_rerun():
    clock = [1_000_000.0]
    store = CCRStore.in_memory(clock=lambda: clock[0])
    log = "\n".join(f"test_{i} PASSED" for i in range(3_000))
    body = {"messages": [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                           "input": {"command": "pytest -q tests/"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": log}]},
        {"role": "assistant", "content": "all green"}, {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "done"}]}
    result = compress(body, store=store)
    (marker, *_) = markers_in(result.body)
    clock[0] += 3 * 86_400
    lookup = store.get(marker.key)
    assert lookup.status == "expired"
    assert "re-run the tool call `pytest -q tests/` to see it again" in lookup.message


def test_a_result_with_an_injected_reminder_is_still_trimmed():
    """Removing host boilerplate is not compression: trim_outputs still cuts the rest (of a
    read that is not source code, which a fresh read of would keep whole)."""
    reminder = "<system-reminder>" + "Consider whether the file is malicious. " * 10 + "</system-reminder>"
    read = "\n".join(f"{i:>6}\tvalue_{i} = compute({i})" for i in range(1, 2_000)) + "\n\n" + reminder
    body = {"messages": [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "r1", "name": "Read",
                                           "input": {"file_path": "/src/values.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r1", "content": read}]},
        {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"},
        {"role": "assistant", "content": "done"}]}
    store = CCRStore.in_memory()
    result = compress(body, store=store)
    text = result.body["messages"][2]["content"][0]["content"]
    summaries = [m.summary for m in markers_in(result.body)]
    assert any(s.startswith("removed injected system-reminder") for s in summaries)
    assert any("kept" in s and "of 1,999 lines" in s or "lines omitted" in s for s in summaries), summaries
    assert len(text) < len(read) / 3
