"""The stand-in itself, read by the official SDKs (no agent client needed: runs everywhere)."""

from __future__ import annotations

import anthropic
import openai
import pytest

from tests.e2e.standin import (
    Call,
    ServerThread,
    Standin,
    Turn,
    check_anthropic,
    check_chat,
    check_responses,
    results_by_turn,
)

SCRIPT = [
    Turn("Reading.", [Call("read", {"path": "a.py"})], thinking="Look first."),
    Turn("", [Call("apply_patch", "*** Begin Patch\n*** End Patch\n", custom=True)]),
    Turn("Done."),
]


@pytest.fixture
def srv(tmp_path):
    with ServerThread(Standin(SCRIPT, record_dir=tmp_path / "rec")) as s:
        yield s


TOOLS_A = [{"name": "read", "description": "r", "input_schema": {"type": "object"}}]


def test_anthropic_json_and_stream_follow_the_script(srv):
    client = anthropic.Anthropic(base_url=srv.url, api_key="x", max_retries=0)
    msgs = [{"role": "user", "content": "go"}]
    first = client.messages.create(model="m", max_tokens=10, messages=msgs, tools=TOOLS_A)
    assert [b.type for b in first.content] == ["thinking", "text", "tool_use"]
    assert first.stop_reason == "tool_use" and first.content[2].id == "toolu_e2e_00_0"
    msgs += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_e2e_00_0", "content": "ok"}]}]
    with client.messages.stream(model="m", max_tokens=10, messages=msgs, tools=TOOLS_A) as stream:
        second = stream.get_final_message()
    assert second.content[0].type == "tool_use" and second.content[0].input == {"input": SCRIPT[1].calls[0].args}
    assert second.content[0].id == "toolu_e2e_01_0"
    title = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "title?"}])
    assert title.content[0].text.startswith("E2E scenario [e2e progress: turn_e2e_01_99]")
    st = srv.standin
    assert [r.turn for r in st.model_calls()] == [0, 1, None]
    assert st.problems() == [] and results_by_turn("messages", st.requests[1].body) == {0: "ok"}
    assert client.messages.count_tokens(model="m", messages=msgs).input_tokens > 0


def test_responses_json_and_stream_follow_the_script(srv):
    client = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="x", max_retries=0)
    tools = [{"type": "function", "name": "read", "parameters": {"type": "object"}}]
    first = client.responses.create(model="m", input="go", tools=tools)
    assert [o.type for o in first.output] == ["reasoning", "message", "function_call"]
    assert first.output[2].call_id == "call_e2e_00_0" and first.output_text == "Reading."
    items = [{"role": "user", "content": "go"}, *[o.model_dump(exclude_none=True) for o in first.output],
             {"type": "function_call_output", "call_id": "call_e2e_00_0", "output": "ok"}]
    stream = client.responses.create(model="m", input=items, tools=tools, stream=True)
    events = [e.type for e in stream]
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert "response.custom_tool_call_input.delta" in events
    final = srv.standin.requests[-1]
    assert final.turn == 1 and check_responses(final.body) == []


def test_chat_completions_stream_follow_the_script(srv):
    client = openai.OpenAI(base_url=f"{srv.url}/v1", api_key="x", max_retries=0)
    tools = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
    chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}],
                                                 tools=tools, stream=True, stream_options={"include_usage": True}))
    calls = [tc for c in chunks for ch in c.choices for tc in (ch.delta.tool_calls or [])]
    assert calls[0].id == "call_e2e_00_0" and chunks[-1].usage is not None
    done = client.chat.completions.create(model="m", tools=tools, messages=[
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [{"id": "call_e2e_01_0", "type": "function",
                                               "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_e2e_01_0", "content": "ok"}])
    assert done.choices[0].message.content == "Done." and done.choices[0].finish_reason == "stop"


def test_protocol_checks_catch_broken_pairing():
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]}
    assert check_anthropic({"messages": [{"role": "user", "content": "a"}, use, {"role": "user", "content": "b"}]})
    assert check_anthropic({"messages": [{"role": "user", "content": "a"}, use,
                                         {"role": "system", "content": "s"},
                                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}]})
    assert not check_anthropic({"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "s"}, use,
                                             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}]})
    assert check_responses({"input": [{"type": "function_call_output", "call_id": "c9", "output": "x"}]})
    assert check_responses({"input": [{"type": "custom_tool_call", "call_id": "c1", "name": "p", "input": ""},
                                      {"type": "function_call_output", "call_id": "c1", "output": "x"}]})
    assert check_chat({"messages": [{"role": "assistant", "tool_calls": [{"id": "c1"}]}, {"role": "user", "content": "x"}]})
