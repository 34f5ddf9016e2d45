"""The proxy on the OpenAI Responses route (`POST /v1/responses`, what Codex speaks): the official
SDK and Codex-shaped bodies -> proxy -> fake upstream on 127.0.0.1."""

from __future__ import annotations

import json

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.config import CompressConfig
from compress.formats.usage import Usage
from ctxmill.proxy.identity import request_key, session_key
from ctxmill.proxy.usage_tap import UsageTap
from tests.fake_upstream import responses_body, responses_events
from tests.proxy_helpers import openai_client
from tests.strategies import responses_requests
from tests.test_proxy import SMALL, fake, start_proxy, stats, upstream  # noqa: F401 - fixtures

LOG_LINES = 3_000


def build_log(n: int) -> str:
    """A 3,000-line build log (~240 KB) that fails near its end."""
    lines = [f"[{i:05d}] building //services/module_{n}/target_{i % 97}:lib ... ok "
             f"({i * 37 % 1000} ms, cache {'hit' if i % 3 else 'miss'})" for i in range(LOG_LINES)]
    lines[2_400] = f"ERROR: //services/module_{n}/target_7:lib failed: undefined symbol parse_config_{n}"
    return "\n".join(lines)


def codex_request(logs: int = 8, stream: bool = True) -> dict:
    """A Codex request whose `logs` turns each ran a build with a 3,000-line log."""
    items: list[dict] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Make the build pass."}]}]
    for n in range(logs):
        call_id = f"call_build_{n}"
        items += [{"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": "gAAAAB" + "Q" * 600},
                  {"type": "function_call", "name": "exec_command", "call_id": call_id,
                   "arguments": json.dumps({"cmd": f"bazel build //services/module_{n}/..."})},
                  {"type": "function_call_output", "call_id": call_id,
                   "output": "Chunk ID: 4f2a\nWall time: 41.2 seconds\nProcess exited with code 1\nOutput:\n" + build_log(n)}]
    return {"model": "gpt-5.5", "instructions": "You are a coding agent.", "input": items, "tools": [],
            "tool_choice": "auto", "parallel_tool_calls": True, "store": False, "stream": stream,
            "include": ["reasoning.encrypted_content"], "prompt_cache_key": "codex-session-1"}


def call_ids(body: dict) -> list[tuple[str, str]]:
    return [(i["type"], i.get("call_id", "")) for i in body["input"]]


def test_a_19mb_request_with_eight_build_logs_reaches_the_upstream_under_two_thirds(fake, start_proxy):
    proxy = start_proxy(compress=CompressConfig(), chain=None)
    raw = orjson.dumps(codex_request())
    assert 1.8e6 < len(raw) < 2.0e6
    sizes = []
    for k in range(5):
        stream = k % 2 == 0
        body = raw if stream else orjson.dumps(codex_request(stream=False))
        r = httpx.post(proxy.url + "/v1/responses", content=body, timeout=60,
                       headers={"content-type": "application/json", "authorization": "Bearer sk-test"})
        assert r.status_code == 200 and r.content == bytes(fake.sent[-1])  # the reply passes through
        assert r.headers["content-type"].startswith("text/event-stream" if stream else "application/json")
        sent = fake.received[-1].json()
        assert call_ids(sent) == call_ids(orjson.loads(body))  # nothing dropped or moved
        assert [i for i in sent["input"] if i["type"] == "reasoning"] == \
            [i for i in orjson.loads(body)["input"] if i["type"] == "reasoning"]
        sizes.append(len(fake.received[-1].body) / len(body))
    assert all(size < 2 / 3 for size in sizes[2:]), sizes
    [session] = stats(proxy)["sessions"]
    assert session["provider"] == "openai-responses" and session["usage_reports"] == 5
    assert session["cache_read_tokens"] > 0 and session["failures"] == 0


def test_sdk_conversation_streamed_and_plain_is_compressed_paired_and_transparent(fake, start_proxy):
    proxy = start_proxy(compress=SMALL, chain=None)
    client, received = openai_client(proxy.url)
    history: list[dict] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the build"}]}]
    sent = []
    for turn in range(6):
        call_id = f"call_{turn}"
        fake.replies.append([{"type": "reasoning", "summary": [], "encrypted_content": f"enc-{turn}"},
                             {"type": "function_call", "name": "exec_command", "call_id": call_id,
                              "arguments": json.dumps({"cmd": f"make step{turn}"})}])
        sent.append(list(history))
        if turn % 2:
            events = list(client.responses.create(model="gpt-5.5", input=history, store=False, stream=True))
            assert events[-1].type == "response.completed" and events[-1].response.usage.input_tokens > 0
            output = [item.model_dump(exclude_none=True) for item in events[-1].response.output]
        else:
            response = client.responses.create(model="gpt-5.5", input=history, store=False)
            output = [item.model_dump(exclude_none=True) for item in response.output]
        assert [o["type"] for o in output] == ["reasoning", "function_call"] and output[1]["call_id"] == call_id
        history += output + [{"type": "function_call_output", "call_id": call_id, "output": build_log(turn)}]
    assert [bytes(b) for b in received] == [bytes(s) for s in fake.sent]  # replies byte for byte
    upstream_bodies = [r.json() for r in fake.received]
    for up, mine in zip(upstream_bodies, sent):
        assert [(i["type"], i.get("call_id")) for i in up["input"]] == [(i["type"], i.get("call_id")) for i in mine]
    assert len(fake.received[-1].body) < len(orjson.dumps(sent[-1])) / 2
    assert b"deep_expand(" in fake.received[-1].body
    [session] = stats(proxy)["sessions"]
    assert session["requests"] == session["usage_reports"] == 6 and session["saved"] > 0


def test_other_responses_endpoints_and_stored_conversations_pass_untouched(fake, start_proxy):
    proxy = start_proxy(compress=SMALL, chain=None)
    r = httpx.get(proxy.url + "/v1/responses/resp_123?include=x", headers={"authorization": "Bearer k"})
    assert r.json() == {"method": "GET", "path": "/v1/responses/resp_123", "query": "include=x"}
    upgrade = httpx.get(proxy.url + "/v1/responses", headers={"connection": "Upgrade", "upgrade": "websocket"})
    assert upgrade.json()["method"] == "GET" and "upgrade" not in fake.received[-1].headers  # hop-by-hop
    for path, body in (("/v1/responses/compact", codex_request(logs=2)),
                       ("/v1/responses", {**codex_request(logs=2), "previous_response_id": "resp_1"})):
        raw = orjson.dumps(body)
        httpx.post(proxy.url + path, content=raw, headers={"content-type": "application/json"}, timeout=30)
        assert fake.received[-1].path == path and fake.received[-1].body == raw
    assert stats(proxy)["sessions"] == []


@settings(max_examples=100, deadline=None)
@given(responses_requests(), st.sampled_from([{}, {"prompt_cache_key": "k"}, {"user": "u"}]))
def test_request_key_reads_the_session_key_of_a_responses_body(body, ids):
    body = {**body, **ids}
    key = request_key("openai-responses", orjson.dumps(body))
    assert key == session_key("openai-responses", body)
    grown = {**body, "input": body["input"] + [{"type": "message", "role": "user", "content": "more"}]}
    assert request_key("openai-responses", orjson.dumps(grown)) == key  # one session per conversation
    assert request_key("openai-responses", orjson.dumps({**body, "previous_response_id": "resp_1"})) is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0), max_size=30), st.integers(min_value=1, max_value=10**6))
def test_responses_usage_from_any_chunking_of_the_stream_and_from_json(points, prompt):
    items = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}]
    stream = b"".join(e for e, _ in responses_events(items, 1, prompt))
    cuts = sorted({p % (len(stream) + 1) for p in points})
    tap = UsageTap("openai-responses", event_stream=True)
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        tap.feed(stream[a:b])
    expected = Usage(input=prompt - prompt // 2, cache_read=prompt // 2, output=40)
    assert tap.finish() == expected
    tap = UsageTap("openai-responses", event_stream=False)
    tap.feed(orjson.dumps(responses_body(items, 1, prompt)))
    assert tap.finish() == expected


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/responses/"])
def test_an_unreadable_responses_body_is_forwarded_untouched(fake, start_proxy, path):
    proxy = start_proxy(compress=SMALL, chain=None)
    for payload in (b"{not json", b'{"input": "just a string"}', b'{"model": "m"}'):
        httpx.post(proxy.url + path, content=payload, headers={"content-type": "application/json"})
        assert fake.received[-1].body == payload
    assert stats(proxy)["totals"]["requests"] == 0
