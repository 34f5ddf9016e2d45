"""Provider request shapes: lossless round trips, shape detection, pass-through of the unknown."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings

from compress.formats.requests import SHAPES, InvalidRequest, detect, from_provider, to_provider
from compress.formats.requests.shape import Marks
from compress.model import OTHER, TOOL_RESULT, TOOL_USE, index_tool_calls
from tests.strategies import anthropic_requests, openai_requests, requests


@settings(max_examples=200, deadline=None)
@given(requests)
def test_round_trip_is_lossless(body):
    snapshot = copy.deepcopy(body)
    request = from_provider(body)
    assert to_provider(request) == snapshot
    assert body == snapshot  # parsing never mutates the input


@settings(max_examples=100, deadline=None)
@given(anthropic_requests())
def test_anthropic_detected_and_paired(body):
    request = from_provider(body)
    assert request.provider == "anthropic"
    calls = index_tool_calls(request.messages)
    uses = [b for m in request.messages for b in m.blocks if b.kind == TOOL_USE]
    assert len(calls) == len(uses)
    for call in calls.values():
        result = request.messages[call.result_msg].blocks[call.result_block]
        assert result.kind == TOOL_RESULT and result.tool_id == call.tool_id
        assert result.tool_name == call.name  # results learn the name of their call


@settings(max_examples=100, deadline=None)
@given(openai_requests())
def test_openai_detected_and_paired(body):
    request = from_provider(body)
    assert request.provider == "openai"
    calls = index_tool_calls(request.messages)
    for call in calls.values():
        assert call.result_msg > call.use_msg


def test_turns_count_assistant_messages():
    body = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                         {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]}
    assert [m.turn for m in from_provider(body).messages] == [0, 1, 1, 2]


def test_unknown_blocks_and_fields_pass_through():
    body = {"system": "s", "custom": {"x": 1}, "messages": [
        {"role": "user", "content": [{"type": "document", "source": {"data": "…"}}, {"type": "text", "text": "hi"}],
         "extra": True},
        {"role": "assistant", "content": [{"type": "server_tool_use", "id": "s1"}, "not a block"]},
        "not a message",
    ]}
    request = from_provider(body)
    assert request.messages[0].blocks[0].kind == OTHER
    assert request.messages[2].role == "other"
    assert to_provider(request) is body


def test_openai_unparseable_arguments_survive():
    body = {"messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{broken"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"}]}
    request = from_provider(body)
    assert request.messages[0].blocks[0].input == "{broken"
    assert to_provider(request) is body


@pytest.mark.parametrize("body, reason", [
    ([], "JSON object"),
    ({"model": "x"}, "missing"),
    ({"messages": {"role": "user"}}, "dict"),
])
def test_unusable_bodies_are_rejected_with_a_reason(body, reason):
    with pytest.raises(InvalidRequest, match=reason):
        detect(body)


def test_detection_signals():
    assert detect({"messages": [{"role": "tool", "tool_call_id": "1", "content": ""}]}) == "openai"
    assert detect({"system": "x", "messages": []}) == "anthropic"
    assert detect({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}) == "openai"
    assert detect({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1"}]}]}) == "anthropic"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_shape_module_provides_what_shape_py_lists(name):
    shape = SHAPES[name]
    assert shape.NAME == name
    assert isinstance(shape.MESSAGES_FIELD, str) and isinstance(shape.MARKS, Marks)
    assert shape.ENDPOINT.startswith("/v1/") and shape.VENDOR in ("anthropic", "openai")
    assert isinstance(shape.SYSTEM_FIELD, str) and shape.SYSTEM_FIELD in ("", *shape.HEAD_FIELDS)
    assert all(isinstance(f, str) for f in (*shape.HEAD_FIELDS, *shape.STORED_HISTORY_FIELDS))
    assert all(callable(getattr(shape, f)) for f in ("parse_message", "render_message", "usage_fields"))
