"""Requests that carry the provider's own context management, shaped as the providers document
them: Anthropic server-side compaction (a `compaction` block, `compact_20260112`), Anthropic
context editing (`clear_tool_uses_20250919`) and OpenAI Responses compaction items. ctxmill
spends no CCR write and no rewrite on what the provider drops, and never changes what it needs."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import httpx
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.formats.requests import from_provider
from compress.formats.requests.managed import managed_floor
from compress.runner.message_tokens import MessageTokens
from compress.state.session import Session
from compress.tiers import TierThresholds
from compress.token_counters import estimate_tokens
from tests.helpers import SMALL_TAIL, compress, markers_in
from tests.proxy_helpers import example
from tests.test_proxy import SMALL, fake, start_proxy, upstream  # noqa: F401 - fixtures
from tests.test_proxy_responses import build_log

SUMMARY = "<summary>The user asked to fix the failing tests; three files were read and one edited.</summary>"


def _renamed(messages: list[dict], suffix: str) -> list[dict]:
    """The messages with every tool id given `suffix` (a second, independent stretch of work)."""
    out = copy.deepcopy(messages)
    for m in out:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b.get("type") == "tool_use":
                b["id"] += suffix
            elif b.get("type") == "tool_result":
                b["tool_use_id"] += suffix
    return out


def anthropic_compacted(compaction: bool = True) -> dict:
    """The example conversation, then an assistant reply that opens with a compaction block (as
    a `compact_20260112` response does), then the same work again under new tool ids."""
    body = example()
    work = body["messages"][:21]
    reply = {"role": "assistant", "content": ([{"type": "compaction", "content": SUMMARY}] if compaction else [])
             + [{"type": "text", "text": "Continuing from the summary."}]}
    again = [{"role": "user", "content": "Go on with the same checks."}] + _renamed(body["messages"][1:], "_b")
    return {**body, "messages": work + [reply] + again,
            "context_management": {"edits": [{"type": "compact_20260112",
                                              "trigger": {"type": "input_tokens", "value": 150000}}]}}


def test_anthropic_compaction_nothing_before_the_block_is_changed_or_stored():
    body = anthropic_compacted()
    floor = 22  # the message after the one holding the compaction block
    store = CCRStore.in_memory()
    result = compress(body, store=store)
    sent = result.body["messages"]
    assert sent[:floor] == body["messages"][:floor]  # what the API drops: as the client sent it
    assert sent[21]["content"][0] == {"type": "compaction", "content": SUMMARY}  # the block itself
    assert not markers_in(sent[:floor])
    after = markers_in(sent[floor:])
    assert after and result.report.ccr_written == len({m.key for m in after})
    assert "compaction at message 21" in result.report.provider_context


def test_without_compaction_the_same_early_messages_are_compressed():
    """The control: the same conversation with no compaction block has markers before message 22."""
    result = compress(anthropic_compacted(compaction=False))
    assert markers_in(result.body["messages"][:22])
    assert result.report.provider_context == ""


def test_compaction_arriving_later_rewrites_nothing_before_it():
    """A session that compressed the early messages keeps sending them as it did once a
    compaction block arrives (no cache rewrite), and stores nothing new for them."""
    session, store = Session.memory(), CCRStore.in_memory()
    full = anthropic_compacted()
    first = compress({**full, "messages": full["messages"][:21]}, session=session, store=store)
    second = compress(full, session=session, store=store)
    assert second.body["messages"][:21] == first.body["messages"]
    assert second.body["messages"][21] == full["messages"][21]
    # every original this run stores is one a marker after the compaction names
    assert second.report.ccr_written == len({m.key for m in markers_in(second.body["messages"][22:])}) > 0


def _cleared_body(edit: dict) -> dict:
    body = example()
    return {**body, "context_management": {"edits": [edit]}}


def _tool_result_messages(body: dict) -> list[int]:
    return [i for i, m in enumerate(body["messages"])
            if isinstance(m["content"], list) and any(b.get("type") == "tool_result" for b in m["content"])]


def test_clear_tool_uses_leaves_the_results_it_clears_alone():
    edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 5},
            "keep": {"type": "tool_uses", "value": 2}}
    body = _cleared_body(edit)
    results = _tool_result_messages(body)
    result = compress(body)
    last_cleared = results[-3]  # 11 results; the newest 2 are kept by the API
    sent = result.body["messages"]
    assert sent[:last_cleared + 1] == body["messages"][:last_cleared + 1]
    assert f"up to message {last_cleared}" in result.report.provider_context
    assert markers_in(sent[last_cleared + 1:])


def test_clear_tool_uses_that_will_not_fire_changes_nothing_of_ctxmills_work():
    """Not reached (trigger), nothing to clear (keep), or too little to clear (clear_at_least):
    the request is compressed as if the edit were absent."""
    plain = compress(example())
    for edit in ({"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 10**7}},
                 {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1},
                  "keep": {"type": "tool_uses", "value": 50}},
                 {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1},
                  "clear_at_least": {"type": "input_tokens", "value": 10**7}}):
        result = compress(_cleared_body(edit))
        assert result.body["messages"] == plain.body["messages"], edit
        assert result.report.provider_context == ""


def test_clear_tool_uses_excluded_tools_and_defaults():
    body = example()
    request = from_provider(body)
    tokens = [10] * len(request.messages)
    names = [b.tool_name for m in request.messages for b in m.blocks if b.kind == "tool_use"]
    everything = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1},
                  "keep": {"type": "tool_uses", "value": 0}}
    all_floor = managed_floor({"context_management": {"edits": [everything]}}, request.messages, tokens).floor
    assert all_floor == _tool_result_messages(body)[-1] + 1
    last_name = names[-1]
    spared = {**everything, "exclude_tools": [last_name]}
    floor = managed_floor({"context_management": {"edits": [spared]}}, request.messages, tokens).floor
    assert floor < all_floor  # the newest call's tool is never cleared
    # the documented default trigger is 100,000 input tokens
    default = {"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}
    assert managed_floor(default, request.messages, tokens).floor == 0
    assert managed_floor(default, request.messages, [10_000] * len(tokens)).floor > 0


EDIT_VALUES = st.one_of(st.none(), st.integers(-5, 10**6), st.text(max_size=5), st.booleans(),
                        st.lists(st.text(max_size=5), max_size=3),
                        st.fixed_dictionaries({"type": st.sampled_from(["input_tokens", "tool_uses", "x"]),
                                               "value": st.one_of(st.integers(-5, 50), st.text(max_size=3))}))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["trigger", "keep", "clear_at_least", "exclude_tools", "clear_tool_inputs"]),
                       EDIT_VALUES), st.integers(0, 2000))
def test_any_edit_settings_never_raise_and_the_floor_stays_in_range(edit, per_message):
    body = example()
    request = from_provider(body)
    managed = managed_floor({"context_management": {"edits": [{"type": "clear_tool_uses_20250919", **edit}]}},
                            request.messages, [per_message] * len(request.messages))
    assert 0 <= managed.floor <= len(request.messages)
    assert bool(managed.floor) == bool(managed.reason)


def responses_compacted(compaction: bool = True) -> dict:
    """A Codex-shaped Responses body: three builds, a compaction item (as `/responses/compact`
    or `compact_threshold` returns it), then three more builds."""
    def builds(start: int) -> list[dict]:
        items = []
        for n in range(start, start + 3):
            items += [{"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": "gAAAAB" + "Q" * 80},
                      {"type": "function_call", "name": "exec_command", "call_id": f"call_{n}",
                       "arguments": json.dumps({"cmd": f"make target{n}"})},
                      {"type": "function_call_output", "call_id": f"call_{n}", "output": build_log(n)}]
        return items
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Make the build pass."}]}]
    items += builds(0)
    if compaction:
        items.append({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAB" + "c29tZQ" * 40})
    items += [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Continue."}]}]
    items += builds(3)
    return {"model": "gpt-5.5", "instructions": "You are a coding agent.", "input": items, "store": False,
            "context_management": [{"type": "compaction", "compact_threshold": 200000}]}


def test_responses_compaction_item_nothing_before_it_is_changed():
    body = responses_compacted()
    floor = 11  # user message, 9 build items, then the compaction item at 10
    result = compress(body)
    sent = result.body["input"]
    assert sent[:floor] == body["input"][:floor]
    assert sent[10] == body["input"][10]  # the compaction item, encrypted_content and all
    assert markers_in(sent[floor:]) and not markers_in(sent[:floor])
    control = compress(responses_compacted(compaction=False))
    assert markers_in(control.body["input"][:10])  # without it, the early builds are compressed


def test_through_the_proxy_what_the_provider_manages_reaches_it_as_sent(fake, start_proxy):
    cleared = _cleared_body({"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 5},
                             "keep": {"type": "tool_uses", "value": 2}})
    for path, body, field, floor, headers in (
            ("/v1/messages", anthropic_compacted(), "messages", 22,
             {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "anthropic-beta": "compact-2026-01-12"}),
            ("/v1/messages", cleared, "messages", _tool_result_messages(cleared)[-3] + 1,
             {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01",
              "anthropic-beta": "context-management-2025-06-27"}),
            ("/v1/responses", responses_compacted(), "input", 11, {"authorization": "Bearer sk-test"})):
        proxy = start_proxy(compress=SMALL, chain=None)  # its own sessions: the first two share a prefix
        raw = orjson.dumps(body)
        r = httpx.post(proxy.url + path, content=raw, headers={"content-type": "application/json", **headers},
                       timeout=120)
        assert r.status_code == 200
        sent = fake.received[-1].json()
        assert fake.received[-1].headers.get("anthropic-beta") == headers.get("anthropic-beta")
        assert sent[field][:floor] == body[field][:floor]  # what the provider drops or clears: as sent
        assert sent["context_management"] == body["context_management"]
        assert markers_in(sent[field][floor:]) and len(fake.received[-1].body) < len(raw)


def test_the_tier_counts_only_what_the_provider_reads_after_a_compaction():
    """Without usage figures the tier comes from the request's size; messages a compaction
    dropped are not part of the context the model reads."""
    body = anthropic_compacted()
    request = from_provider(body)
    tokens = MessageTokens(estimate_tokens)
    dropped = sum(tokens.message(m) for m in request.messages[:21])
    total = compress(body).report.tokens_before
    line = total - dropped // 2  # the whole request is above it, what the model reads below
    config = replace(SMALL_TAIL, tiers=TierThresholds(medium=line, high=line))
    assert compress(anthropic_compacted(compaction=False), config=config).report.tier == "high"
    assert compress(body, config=config).report.tier == "always"


@st.composite
def compacted_requests(draw):
    """An Anthropic or Responses request with a compaction at a drawn place: a compaction block
    opening a drawn assistant message, or a compaction item inserted before a drawn item."""
    from tests.strategies import anthropic_requests, responses_requests

    if draw(st.booleans()):
        body = draw(anthropic_requests())
        replies = [i for i, m in enumerate(body["messages"]) if m["role"] == "assistant"]
        if not replies:
            return body, 0
        at = draw(st.sampled_from(replies))
        message = body["messages"][at]
        content = message["content"] if isinstance(message["content"], list) else \
            [{"type": "text", "text": message["content"]}]
        body["messages"][at] = {**message, "content": [{"type": "compaction", "content": SUMMARY}, *content]}
        return body, at + 1
    body = draw(responses_requests())
    at = draw(st.integers(0, len(body["input"])))
    body["input"].insert(at, {"type": "compaction", "encrypted_content": "gAAAAB" + "c29tZQ" * 10})
    return body, at + 1


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(compacted_requests())
def test_nothing_up_to_a_compaction_is_ever_changed_or_stored(drawn):
    body, floor = drawn
    field = "messages" if "messages" in body else "input"
    snapshot = copy.deepcopy(body)
    store = CCRStore.in_memory()
    result = compress(body, store=store)
    assert not result.report.error
    assert result.body[field][:floor] == snapshot[field][:floor]
    assert result.report.ccr_written == len({m.key for m in markers_in(result.body[field][floor:])})


def test_clear_at_least_counts_the_inputs_only_of_the_tools_clear_tool_inputs_names():
    body = example()
    request = from_provider(body)
    tokens = [10] * len(request.messages)
    results = len(_tool_result_messages(body))
    names = sorted({b.tool_name for m in request.messages for b in m.blocks if b.kind == "tool_use"})

    def floor(inputs) -> int:
        edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1},
                "keep": {"type": "tool_uses", "value": 0}, "clear_tool_inputs": inputs,
                "clear_at_least": {"type": "input_tokens", "value": 10 * results + 5}}
        return managed_floor({"context_management": {"edits": [edit]}}, request.messages, tokens).floor

    assert floor(False) == 0 and floor(["NoSuchTool"]) == 0  # the results alone are too little
    assert floor(True) > 0 and floor(names) == floor(True)
