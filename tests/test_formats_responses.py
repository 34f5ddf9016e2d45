"""The OpenAI Responses request shape: lossless, paired by call_id, one turn per reply, reasoning
untouched, stored conversations passed through, and every stage at work on a Codex session."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

from hypothesis import HealthCheck, given, settings

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import detect, from_provider, to_provider
from compress.formats.requests.openai_responses import render_message
from compress.formats.usage import usage_of_event
from compress.model import IMAGE, REDACTED_THINKING, TEXT, TOOL_RESULT, Block, index_tool_calls
from compress.runner.pipeline import run
from compress.state.session import Session
from compress.tiers import TierThresholds
from ground.jsonbytes import dumps
from tests.strategies import responses_requests, wild_long_texts, wild_texts

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HIGH = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1, min_saving_chars=20,
                      tiers=TierThresholds(medium=1, high=1))


def message(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def call(call_id: str, cmd: str, name: str = "exec_command") -> dict:
    return {"type": "function_call", "name": name, "arguments": json.dumps({"cmd": cmd}), "call_id": call_id}


def output(call_id: str, text: str, kind: str = "function_call_output") -> dict:
    return {"type": kind, "call_id": call_id, "output": text}


def reasoning(n: int) -> dict:
    return {"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": f"step {n}"}],
            "content": None, "encrypted_content": f"gAAAAB{n}" + "Zm9v" * 50}


@PROPS
@given(responses_requests(texts=wild_texts, long_texts=wild_long_texts, wild=True))
def test_round_trip_is_lossless_and_keeps_the_objects(body):
    snapshot = copy.deepcopy(body)
    request = from_provider(body)
    assert request.provider == "openai-responses" == detect(body)
    assert to_provider(request) is body  # unchanged messages render as the very objects
    assert body == snapshot
    assert len(request.messages) == len(body["input"])  # one canonical message per item


@PROPS
@given(responses_requests())
def test_calls_pair_with_their_outputs_by_call_id(body):
    request = from_provider(body)
    calls = index_tool_calls(request.messages)
    items = body["input"]
    for call_id, found in calls.items():
        assert items[found.use_msg]["call_id"] == call_id
        assert found.result_msg > found.use_msg and items[found.result_msg]["call_id"] == call_id
        result = request.messages[found.result_msg].blocks[0]
        assert result.kind == TOOL_RESULT and result.tool_name == found.name


def test_items_become_messages_of_typed_blocks():
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch\n"
    body = {"model": "gpt-5.5", "input": [
        message("developer", "rules"),
        {"role": "user", "content": "fix it"},  # the type-less form
        reasoning(1),
        message("assistant", "Looking."),
        call("c1", "cat a.py"),
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": patch},
        {"type": "local_shell_call", "id": "l1", "call_id": "c3", "status": "completed",
         "action": {"type": "exec", "command": ["bash", "-lc", "ls"]}},
        {"type": "web_search_call", "id": "ws", "status": "completed"},
        output("c1", "x = 1"),
        output("c2", "Exit code: 0\nOutput:\nSuccess.", "custom_tool_call_output"),
        {"type": "function_call_output", "call_id": "c3", "output": [
            {"type": "input_text", "text": "a.py"}, {"type": "input_image", "image_url": "data:image/png;base64,AA"}]},
    ]}
    msgs = from_provider(body).messages
    assert [m.role for m in msgs] == ["system", "user", "assistant", "assistant", "assistant", "assistant",
                                      "assistant", "other", "tool", "tool", "tool"]
    assert msgs[1].content_is_str and msgs[1].blocks[0].text == "fix it"
    assert msgs[2].blocks[0].kind == REDACTED_THINKING
    uses = [m.blocks[0] for m in msgs[4:7]]
    assert [(b.tool_id, b.tool_name) for b in uses] == [("c1", "exec_command"), ("c2", "apply_patch"), ("c3", "local_shell")]
    assert uses[0].input == {"cmd": "cat a.py"} and uses[1].input == {"input": patch}
    assert uses[2].input["command"][-1] == "ls"
    assert [m.blocks[0].tool_name for m in msgs[8:]] == ["exec_command", "apply_patch", "local_shell"]
    assert [p.kind for p in msgs[10].blocks[0].parts] == [TEXT, IMAGE]
    # one model reply (reasoning, text, three calls; an unknown item between) is one turn
    assert [m.turn for m in msgs] == [0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]


def test_changed_blocks_render_in_the_items_own_shape():
    patch_item = {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "long patch"}
    msgs = from_provider({"input": [call("c1", "make"), patch_item, output("c1", "log"),
                                    {"role": "user", "content": "go"}]}).messages
    fn = msgs[0].with_blocks([msgs[0].blocks[0].with_input({"cmd": "note"})])
    assert render_message(fn)["arguments"] == '{"cmd":"note"}'
    patched = msgs[1].with_blocks([msgs[1].blocks[0].with_input({"input": "<<note>>"})])
    assert render_message(patched) == {**patch_item, "input": "<<note>>"}
    result = msgs[2].blocks[0]
    assert render_message(msgs[2].with_blocks([result.with_result_text("short")]))["output"] == "short"
    nudged = msgs[3].with_blocks(msgs[3].blocks + (Block(TEXT, raw={"type": "text", "text": "n"}, text="n"),))
    assert render_message(nudged)["content"] == [{"type": "input_text", "text": "go"}, {"type": "input_text", "text": "n"}]


def codex_session() -> dict:
    """A Codex-shaped session with work for every stage: a large file read, patched and read
    twice, a failing 3,000-line build, a JSON listing, a search, an apply_patch later superseded,
    a reminder in an old output, inline thinking and long prose in old replies, a decision by
    the person."""
    app = "\n".join(f"def helper_{i}(x):\n    return x * {i} + 1\n" for i in range(150))
    build = "\n".join(f"[build] compiling module_{i}.py ... ok ({i}/3000)" for i in range(3000))
    build += "\nTraceback (most recent call last):\n  File \"app.py\", line 4\nAssertionError: add(2, 3) returned -1"
    listing = json.dumps([{"name": f"pkg-{i}", "version": f"1.{i}.0", "license": "MIT"} for i in range(300)])
    patch = "*** Begin Patch\n*** Update File: app.py\n@@\n" + "\n".join(f"+line {i}" for i in range(80)) + "\n*** End Patch\n"
    patched = app + "\n" + "\n".join(f"line {i}" for i in range(80))
    prose = " ".join(f"Step {i}: I looked at module {i} and it compiles; nothing to change there." for i in range(60))
    head = "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code {}\nOutput:\n"
    items = [message("developer", "You are Codex."), message("user", "<environment_context>x</environment_context>"),
             message("user", "The build fails. Fix it; we decided to keep Python 3.9 support."),
             reasoning(1), message("assistant", "<think>plan " * 50 + "</think>Reading the module."),
             call("c1", "cat app.py"), output("c1", head.format(0) + app),
             call("c2", "sh build.sh"),
             output("c2", head.format(1) + build + "\n<system-reminder>" + "keep going " * 40 + "</system-reminder>"),
             reasoning(2), message("assistant", prose), call("c3", "cat package-lock.json"),
             output("c3", listing),
             call("c4", "rg -n helper", name="shell"), output("c4", "\n".join(f"app.py:{i}:def helper_{i}(x):" for i in range(400))),
             {"type": "custom_tool_call", "call_id": "c5", "name": "apply_patch", "input": patch},
             output("c5", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nSuccess. Updated the following files:\nM app.py\n",
                    "custom_tool_call_output"),
             call("c6", "cat app.py"), output("c6", head.format(0) + patched),
             call("c6b", "cat app.py"), output("c6b", head.format(0) + patched),
             {"type": "custom_tool_call", "call_id": "c7", "name": "apply_patch", "input": patch.replace("+line", "+row")},
             output("c7", "Exit code: 0\nOutput:\nSuccess.\nM app.py\n", "custom_tool_call_output")]
    for n in range(8, 14):
        items += [reasoning(n), call(f"c{n}", f"echo {n}"), output(f"c{n}", head.format(0) + f"{n}\n")]
    items.append(message("user", "Good. We decided to drop the old build script; store that."))
    return {"model": "gpt-5.5", "instructions": "Be brief.", "input": items, "tools": [], "store": False,
            "stream": True, "include": ["reasoning.encrypted_content"], "prompt_cache_key": "s1"}


def test_every_stage_works_on_a_codex_session():
    """With decide_on_arrival off, every other stage finds its work; with it on, it cuts the long
    outputs first."""
    body = codex_session()
    arrival = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=HIGH).report
    assert arrival.stages_saved["decide_on_arrival"] > 0 and not arrival.errors
    store = CCRStore.in_memory()
    result = run(body, session=Session.memory(), store=store,
                 config=replace(HIGH, disabled_stages=frozenset({"decide_on_arrival"})))
    report = result.report
    assert report.error == "" and report.errors == []
    saved = {k for k, v in report.stages_saved.items() if v > 0}
    assert saved >= {"strip_reasoning", "strip_injections", "dedup_tool_calls", "purge_errors", "supersede_inputs",
                     "crush_json", "trim_outputs", "compress_prose"}, report.stages_saved
    assert any(stage == "nudges" for _, stage, _ in report.decisions)
    out = result.body["input"]
    assert [i.get("call_id") for i in out] == [i.get("call_id") for i in body["input"]]  # nothing dropped or moved
    assert [i for i in out if i.get("type") == "reasoning"] == [i for i in body["input"] if i.get("type") == "reasoning"]
    assert out[-1]["content"][-1]["type"] == "input_text" and "memory_store" in out[-1]["content"][-1]["text"]
    assert len(dumps(result.body)) < len(dumps(body)) / 3
    for item in out:
        for marker in find_markers(json.dumps(item)):
            assert store.get(marker.key).ok


@PROPS
@given(responses_requests(texts=wild_texts, long_texts=wild_long_texts, wild=True))
def test_reasoning_items_are_never_altered(body):
    result = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=HIGH)
    assert result.report.error == ""
    kept = [i for i in result.body["input"] if isinstance(i, dict) and i.get("type") == "reasoning"]
    assert kept == [i for i in body["input"] if isinstance(i, dict) and i.get("type") == "reasoning"]


def test_a_body_continuing_a_stored_response_passes_through_and_leaves_the_session_alone():
    session = Session.memory()
    first = codex_session()
    run(first, session=session, store=CCRStore.in_memory(), config=HIGH)
    records = dict(session.records)
    follow_up = {"model": "gpt-5.5", "previous_response_id": "resp_1",
                 "input": [output("c99", "x" * 50_000), message("user", "and now?")]}
    result = run(follow_up, session=session, store=CCRStore.in_memory(), config=HIGH)
    assert result.body is follow_up
    assert result.report.mode == "passthrough" and result.report.error == ""
    assert "(previous_response_id)" in result.report.summary_line()
    assert session.records == records
    assert run({**follow_up, "previous_response_id": None, "conversation": "conv_1"},
               session=Session.memory(), store=None, config=HIGH).report.passthrough_reason


def test_usage_from_a_response_body_and_its_stream_events():
    usage = {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1000}, "output_tokens": 30}
    from_body = usage_of_event("openai-responses", None, {"id": "resp_1", "usage": usage})
    assert (from_body.input, from_body.cache_read, from_body.output) == (200, 1000, 30)
    assert usage_of_event("openai-responses", None, {"type": "response.created", "response": {"usage": None}}) is None
    done = usage_of_event("openai-responses", None, {"type": "response.completed", "response": {"usage": usage}})
    assert done == from_body and done.prompt_total == 1200


def test_usage_reports_the_cache_writes_of_gpt_5_6_and_later():
    """From the GPT-5.6 family on OpenAI charges cache writes (1.25x input) and reports them in
    `cache_write_tokens`, inside the prompt count, in both APIs."""
    responses = {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 700, "cache_write_tokens": 450},
                 "output_tokens": 30}
    chat = {"prompt_tokens": 1200, "prompt_tokens_details": {"cached_tokens": 700, "cache_write_tokens": 450},
            "completion_tokens": 30}
    for usage in (usage_of_event("openai-responses", None, {"usage": responses}),
                  usage_of_event("openai", None, {"usage": chat})):
        assert (usage.input, usage.cache_read, usage.cache_write, usage.output) == (50, 700, 450, 30)
        assert usage.prompt_total == 1200
    odd = usage_of_event("openai", None, {"usage": {**chat, "prompt_tokens_details": {"cached_tokens": 1000,
                                                                                        "cache_write_tokens": 900}}})
    assert (odd.input, odd.cache_read, odd.cache_write) == (0, 1000, 200)  # never more than the prompt


def test_session_turn_by_turn_keeps_the_sent_prefix():
    body = codex_session()
    session, store = Session.memory(), CCRStore.in_memory()
    config = replace(HIGH, epoch_savings_threshold=10**9, window_epoch_savings=10**9)
    previous: list[bytes] = []
    for k in range(3, len(body["input"]) + 1):
        result = run({**body, "input": body["input"][:k]}, session=session, store=store, config=config)
        out = [dumps(i) for i in result.body["input"]]
        if result.report.mode == "incremental":
            assert out[: len(previous)] == previous
        previous = out
