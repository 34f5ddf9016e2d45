"""Session readers: every format, detection, malformed lines, pairing, the parentUuid chain."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.formats.requests import from_provider
from compress.formats.sessions import FORMATS, UnknownFormat, read_text
from compress.formats.usage import Usage
from compress.model import TOOL_RESULT, TOOL_USE, index_tool_calls


def jsonl(*items) -> str:
    return "\n".join(x if isinstance(x, str) else json.dumps(x) for x in items) + "\n"


def cc(kind, uuid, parent, message, **extra):
    return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "isSidechain": False,
            "message": message, **extra}


def assistant(mid, blocks, usage=None):
    return {"role": "assistant", "id": mid, "model": "claude-x", "content": blocks,
            "usage": usage or {"input_tokens": 3, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}}


CLAUDE_CODE = jsonl(
    {"type": "file-history-snapshot", "messageId": "x"},
    cc("user", "u1", None, {"role": "user", "content": "fix the bug"}),
    cc("assistant", "a1", "u1", assistant("m1", [{"type": "thinking", "thinking": "hmm", "signature": "s"}])),
    cc("assistant", "a2", "a1", assistant("m1", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a.py"}}])),
    {"type": "progress", "uuid": "p1", "parentUuid": "a2", "sessionId": "s"},
    cc("assistant", "a3", "p1", assistant("m1", [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}])),
    # the first result hangs off a2 (a sibling branch), the second off a3
    cc("user", "r1", "a2", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"}]}),
    cc("user", "r2", "a3", {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t2", "content": "ls: denied", "is_error": True}]}),
    cc("assistant", "side", "r2", assistant("m9", [{"type": "text", "text": "sub-agent"}]), isSidechain=True),
    cc("user", "meta", "r2", {"role": "user", "content": "caveat"}, isMeta=True),
    "{not json",
    cc("assistant", "a4", "r2", assistant("m2", [{"type": "text", "text": "done"}],
                                          {"input_tokens": 5, "cache_read_input_tokens": 200, "cache_creation_input_tokens": 9})),
    # an abandoned branch (the user rewound): not on the chain from the last message
    cc("user", "old", "a4", {"role": "user", "content": "abandoned"}),
    cc("user", "u2", "a4", {"role": "user", "content": "thanks"}),
    cc("assistant", "a5", "u2", assistant("m3", [{"type": "text", "text": "welcome"}])),
)


def test_claude_code_chain_merge_pairing_and_usage():
    t = read_text(CLAUDE_CODE)
    assert t.format == "claude-code" and t.provider == "anthropic"
    assert t.malformed == 1
    roles = [m["role"] for m in t.messages]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]
    # one API response (m1) over three lines is one assistant message and one call
    assert [b["type"] for b in t.messages[1]["content"]] == ["thinking", "tool_use", "tool_use"]
    assert [c.index for c in t.calls] == [1, 3, 5]
    assert t.calls[1].usage.prompt_total == 5 + 200 + 9
    text = json.dumps(t.messages)
    assert "sub-agent" not in text and "caveat" not in text and "abandoned" not in text
    results = [b for b in t.messages[2]["content"]]
    assert [b["tool_use_id"] for b in results] == ["t1", "t2"] and results[1]["is_error"] is True
    request = from_provider(t.request(1))
    calls = index_tool_calls(request.messages)
    assert all(c.result_msg >= 0 for c in calls.values())


def test_claude_code_calls_carry_their_time_and_the_cache_lifetime_the_usage_reports():
    one_hour = {"input_tokens": 3, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 20}}
    text = jsonl(
        cc("user", "u1", None, {"role": "user", "content": "fix it"}, timestamp="2026-06-14T12:06:25.931Z"),
        cc("assistant", "a1", "u1", assistant("m1", [{"type": "tool_use", "id": "t1", "name": "Read",
                                                      "input": {"file_path": "/a.py"}}], one_hour),
           timestamp="2026-06-14T12:06:30.000Z"),
        cc("user", "r1", "a1", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
           timestamp="2026-06-14T12:06:31.000Z"),
        cc("assistant", "a2", "r1", assistant("m2", [{"type": "text", "text": "done"}]), timestamp="2026-06-14T12:16:30Z"),
    )
    t = read_text(text)
    sent = datetime(2026, 6, 14, 12, 6, 30, tzinfo=UTC).timestamp()
    assert [c.at for c in t.calls] == [sent, sent + 600]
    assert t.cache_ttl == "1h" and all(s.cache_ttl == "1h" for s in t.segments())
    assert read_text(CLAUDE_CODE).cache_ttl is None and read_text(CLAUDE_CODE).calls[0].at is None


def thinking_session(read_after_prompt: int, stamped: bool = True) -> str:
    """A tool loop with thinking, a person's prompt, and a call whose cache read is given (the
    call before it reports 3 + 100 + 20 = 123 tokens)."""
    times = iter(f"2026-06-14T12:0{i}:00Z" for i in range(6))

    def at() -> dict:
        return {"timestamp": next(times)} if stamped else {}

    return jsonl(
        cc("user", "u1", None, {"role": "user", "content": "fix it"}, **at()),
        cc("assistant", "a1", "u1", assistant("m1", [{"type": "thinking", "thinking": "look first", "signature": "s"},
                                                     {"type": "tool_use", "id": "t1", "name": "Read",
                                                      "input": {"file_path": "/a.py"}}]), **at()),
        cc("user", "r1", "a1", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}, **at()),
        cc("assistant", "a2", "r1", assistant("m2", [{"type": "text", "text": "done"}]), **at()),
        cc("user", "u2", "a2", {"role": "user", "content": "and the tests"}, **at()),
        cc("assistant", "a3", "u2", assistant("m3", [{"type": "text", "text": "ok"}], {
            "input_tokens": 30, "cache_read_input_tokens": read_after_prompt, "cache_creation_input_tokens": 9}), **at()),
    )


def test_claude_code_replays_ask_to_keep_thinking_when_the_usage_shows_the_host_kept_it():
    """After a person's prompt the provider read the previous request whole: the host kept the
    loop's thinking, so the replayed requests ask for that too; a read that stops short means it
    was dropped; without times (or calls that can tell) the reader does not guess."""
    from compress.formats.requests import keeps_all_thinking
    from compress.formats.sessions.kept_thinking import host_kept_thinking

    kept, dropped = read_text(thinking_session(123)), read_text(thinking_session(40))
    assert host_kept_thinking(kept) is True and keeps_all_thinking("anthropic", kept.request(2))
    assert host_kept_thinking(dropped) is False and not keeps_all_thinking("anthropic", dropped.request(2))
    assert host_kept_thinking(read_text(thinking_session(123, stamped=False))) is None
    assert host_kept_thinking(read_text(CLAUDE_CODE)) is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 200), min_size=1, max_size=6))
def test_the_majority_of_calls_that_can_tell_decides_whether_thinking_was_kept(reads):
    """Sessions glued from tool loops whose prompt-opening call read `reads[i]` of the previous
    request's 123 tokens: kept when most read it whole, dropped when most did not, no guess on
    a tie."""
    from compress.formats.sessions.kept_thinking import WHOLE, host_kept_thinking

    transcripts = [read_text(thinking_session(r)) for r in reads]
    glued = transcripts[0]
    for t in transcripts[1:]:  # the same call pattern, one loop after another
        shift = len(glued.messages)
        glued.messages += t.messages
        glued.calls += [replace(c, index=c.index + shift, at=(c.at or 0) + 3600 * len(glued.calls)) for c in t.calls]
    whole = sum(r >= WHOLE * 123 for r in reads)
    expected = None if 2 * whole == len(reads) else 2 * whole > len(reads)
    assert host_kept_thinking(glued) is expected


def test_iso_time_stamps_are_utc_unless_they_name_their_zone():
    from ground.times import iso_seconds

    utc = datetime(2026, 6, 14, 12, 6, 30, tzinfo=UTC).timestamp()
    assert iso_seconds("2026-06-14T12:06:30Z") == iso_seconds("2026-06-14T12:06:30+00:00") == utc
    assert iso_seconds("2026-06-14T12:06:30") == utc
    assert iso_seconds("2026-06-14T14:06:30+02:00") == utc
    assert iso_seconds("yesterday") is None


def test_claude_code_pairs_results_of_sibling_lines_and_results_written_before_their_call():
    """Real sessions put a response's calls on lines off the chain, and write some result lines
    before the line of their call: every answered call is answered in the history."""
    text = jsonl(
        cc("user", "u1", None, {"role": "user", "content": "go"}),
        cc("assistant", "a1", "u1", assistant("m1", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}])),
        # m1's second call sits on a line off the chain; its result hangs off that line
        cc("assistant", "a2", "u1", assistant("m1", [{"type": "tool_use", "id": "t2", "name": "TaskUpdate", "input": {}}])),
        cc("user", "r2", "a2", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]}),
        cc("user", "r1", "a1", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}),
        # the result of t3 is written before the line of its call
        cc("user", "r3", "a3", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "content": "done"}]}),
        cc("assistant", "a3", "r1", assistant("m2", [{"type": "tool_use", "id": "t3", "name": "Edit", "input": {}}])),
        cc("assistant", "a4", "r3", assistant("m3", [{"type": "text", "text": "finished"}])),
    )
    t = read_text(text)
    request = from_provider(t.request(len(t.calls) - 1))
    calls = index_tool_calls(request.messages)
    assert set(calls) == {"t1", "t2", "t3"}
    assert all(c.result_msg > c.use_msg for c in calls.values())
    assert [m["role"] for m in t.messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_claude_code_follows_host_compaction_and_drops_its_summary():
    text = jsonl(
        cc("user", "u1", None, {"role": "user", "content": "start"}),
        cc("assistant", "a1", "u1", assistant("m1", [{"type": "text", "text": "ok"}])),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b", "parentUuid": None,
         "logicalParentUuid": "a1", "sessionId": "s"},
        cc("user", "sum", "b", {"role": "user", "content": "summary of before"}, isCompactSummary=True),
        cc("user", "u2", "sum", {"role": "user", "content": "go on"}),
        cc("assistant", "a2", "u2", assistant("m2", [{"type": "text", "text": "sure"}])),
    )
    t = read_text(text)
    assert t.host_compactions == 1
    assert [m["content"][0].get("text") for m in t.messages] == ["start", "ok", "go on", "sure"]
    assert [c.after_host_compaction for c in t.calls] == [False, True]


FLAT = jsonl(
    {"role": "user", "content": {"type": "text", "text": "hi"}},
    {"role": "assistant", "content": {"type": "thinking", "text": "think"}},
    {"role": "assistant", "content": {"type": "tool_use", "tool_id": "t1", "tool_name": "Bash", "input": {"command": "x"}}},
    {"role": "assistant", "content": {"type": "tool_use", "tool_id": "t2", "tool_name": "Bash", "input": {"command": "y"}}},
    {"role": "tool", "content": {"type": "tool_result", "tool_id": "t1", "output": "Exit code 1\nboom", "is_error": True}},
    {"role": "tool", "content": {"type": "tool_result", "tool_id": "t2", "output": "fine"}},
    {"role": "assistant", "content": {"type": "text", "text": "done"}},
    {"role": "robot", "content": {"type": "text", "text": "?"}},
    "[1, 2]",
)


def test_claude_flat_groups_blocks_into_messages():
    t = read_text(FLAT)
    assert t.format == "claude-flat" and t.malformed == 2
    assert [m["role"] for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in t.messages[1]["content"]] == ["thinking", "tool_use", "tool_use"]
    assert t.messages[2]["content"][0]["is_error"] is True
    assert [c.index for c in t.calls] == [1, 3]


def test_claude_flat_starts_a_new_history_at_a_compaction_summary():
    summary = "This session is being continued from a previous conversation that ran out of context. Summary: ..."
    t = read_text(jsonl(
        {"role": "user", "content": {"type": "text", "text": "build it"}},
        {"role": "assistant", "content": {"type": "text", "text": "built"}},
        {"role": "user", "content": {"type": "text", "text": summary}},
        {"role": "assistant", "content": {"type": "text", "text": "continuing"}},
        {"role": "user", "content": {"type": "text", "text": "next"}},
        {"role": "assistant", "content": {"type": "text", "text": "done"}},
    ))
    assert t.host_compactions == 1
    assert [m["content"][0]["text"] for m in t.messages] == ["build it", "built", "continuing", "next", "done"]
    first, second = t.segments()
    assert [m["content"][0]["text"] for m in first.messages] == ["build it", "built"]
    assert [m["content"][0]["text"] for m in second.messages] == [summary, "continuing", "next", "done"]
    assert [c.index for c in second.calls] == [1, 3], "the first call after it sends the summary alone"


CODEX = jsonl(
    {"type": "session_meta", "payload": {"base_instructions": {"text": "You are Codex."}}},
    {"type": "turn_context", "payload": {"model": "gpt-5"}},
    {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]}},
    {"type": "response_item", "payload": {"type": "reasoning", "summary": [], "encrypted_content": "zzz"}},
    {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                          "content": [{"type": "output_text", "text": "Looking."}]}},
    {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                                          "arguments": "{\"cmd\":\"ls\"}", "call_id": "c1"}},
    {"type": "event_msg", "payload": {"type": "token_count", "info": None}},  # Codex's first, before any call
    {"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 100, "cached_input_tokens": 20, "output_tokens": 7},
        "last_token_usage": {"input_tokens": 100, "cached_input_tokens": 20, "output_tokens": 7},
        "model_context_window": 258400}}},
    {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "a.py"}},
    {"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch",
                                          "input": "*** Begin Patch\n*** Add File: b.py\n+x\n*** End Patch",
                                          "call_id": "c2"}},
    {"type": "response_item", "payload": {"type": "custom_tool_call_output", "call_id": "c2", "output": "Success"}},
    {"type": "response_item", "payload": "broken"},
)


def test_codex_rollout_becomes_the_responses_body_codex_sends():
    t = read_text(CODEX)
    assert t.format == "codex" and t.provider == "openai-responses"
    assert t.head == {"instructions": "You are Codex.", "model": "gpt-5"}
    assert t.malformed == 1 and not t.skipped["reasoning"]
    items = [json.loads(line)["payload"] for line in CODEX.splitlines()[2:] if '"response_item"' in line][:-1]
    assert t.messages == items  # every item as Codex sends it, reasoning included
    assert [c.index for c in t.calls] == [1, 5]  # reasoning + text + call is one reply
    assert t.calls[0].usage == Usage(input=80, cache_read=20, output=7) and t.calls[1].usage is None
    assert t.context_window == 258_400  # the window Codex says it uses (95% of GPT-5's 272K)
    assert read_text(jsonl(*[json.loads(line) for line in CODEX.splitlines() if "model_context_window" not in line]
                           )).context_window is None
    assert t.request(1)["input"] == items[:5]
    request = from_provider(t.whole())
    uses = [b for m in request.messages for b in m.blocks if b.kind == TOOL_USE]
    assert uses[1].input == {"input": "*** Begin Patch\n*** Add File: b.py\n+x\n*** End Patch"}
    assert all(c.result_msg >= 0 for c in index_tool_calls(request.messages).values())
    assert [m.turn for m in request.messages] == [0, 1, 1, 1, 1, 2, 2]


def test_codex_rollout_drops_what_codex_keeps_to_itself_and_counts_compactions():
    meta = {"internal_chat_message_metadata_passthrough": {"turn_id": "t"}}
    t = read_text(jsonl(
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "a", **meta}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "x", "arguments": "{}", "call_id": "c"}},
        {"type": "compacted", "payload": {"message": "summary"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c", "output": "o", **meta}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": []}},
    ))
    assert t.messages[0] == {"type": "message", "role": "user", "content": "a"}
    assert "internal_chat_message_metadata_passthrough" not in t.messages[2]
    assert t.host_compactions == 1
    assert [(c.index, c.after_host_compaction) for c in t.calls] == [(1, False), (3, True)]


OPENCODE = {
    "info": {"id": "ses"},
    "messages": [
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": "build it"}]},
        {"info": {"role": "assistant", "modelID": "glm"}, "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "plan"},
            {"type": "tool", "tool": "write", "callID": "w1",
             "state": {"status": "completed", "input": {"filePath": "a.txt"}, "output": "ok"}},
            {"type": "tool", "tool": "bash", "callID": "b1",
             "state": {"status": "error", "input": {"command": "x"}, "error": "Error: no x"}},
            {"type": "step-finish"},
            {"type": "step-start"},
            {"type": "text", "text": "done"},
            {"type": "tool", "tool": "bash", "callID": "b2", "state": {"status": "running", "input": {}}},
        ]},
        {"parts": []},
    ],
}


def test_opencode_steps_are_model_calls():
    t = read_text(json.dumps(OPENCODE))
    assert t.format == "opencode" and t.malformed == 1 and t.head["model"] == "glm"
    assert [m["role"] for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in t.messages[1]["content"]] == ["thinking", "tool_use", "tool_use"]
    result = t.messages[2]["content"][1]
    assert result["tool_use_id"] == "b1" and result["is_error"] is True and result["content"] == "Error: no x"
    assert [c.index for c in t.calls] == [1, 3]  # the running tool has no result


CRAFT = jsonl(
    {"id": "sess", "sdkSessionId": "x", "workspaceRootPath": "~", "model": "kimi"},
    {"id": "u", "type": "user", "content": "do it", "order": 1},
    {"id": "t1", "type": "tool", "toolName": "Read", "toolUseId": "call_a_1", "toolInput": {"file_path": "f"},
     "toolResult": "text", "isError": False, "order": 5},
    {"id": "t2", "type": "tool", "toolName": "Bash", "toolUseId": "call_a_2", "toolInput": {"command": "x"},
     "toolResult": "Error: nope", "isError": True, "order": 6},
    {"id": "a", "type": "assistant", "content": "reading", "order": 4},
    {"id": "u", "type": "user", "content": "do it", "order": 1},
    {"id": "t3", "type": "tool", "toolName": "Write", "toolUseId": "call_b_1", "toolInput": {"file_path": "g"},
     "toolResult": "written", "order": 7},
    {"id": "i", "type": "info", "content": "interrupted", "order": 8},
    {"id": "bad"},
)


def test_craft_orders_items_and_batches_parallel_calls():
    t = read_text(CRAFT)
    assert t.format == "craft" and t.head["model"] == "kimi" and t.malformed == 1
    assert t.skipped["duplicate"] == 1 and t.skipped["info"] == 1
    assert [m["role"] for m in t.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["type"] for b in t.messages[1]["content"]] == ["text", "tool_use", "tool_use"]
    assert t.messages[2]["content"][1]["is_error"] is True
    assert [c.index for c in t.calls] == [1, 3]


def test_craft_starts_a_new_history_where_the_host_reports_a_compaction():
    t = read_text(jsonl(
        {"sdkSessionId": "s", "model": "kimi"},
        {"id": "u1", "type": "user", "content": "plan it", "order": 1},
        {"id": "a1", "type": "assistant", "content": "planned", "order": 2},
        {"id": "c", "type": "info", "content": "Compacted Conversation", "statusType": "compaction_complete", "order": 3},
        {"id": "u2", "type": "user", "content": "go on", "order": 4},
        {"id": "a2", "type": "assistant", "content": "going", "order": 5},
    ))
    assert t.host_compactions == 1 and not t.skipped["info"]
    assert [[m["content"][0]["text"] for m in seg.messages] for seg in t.segments()] == [
        ["plan it", "planned"], ["go on", "going"]]


SWE_FC = {"history": [
    {"role": "system", "content": "SETTING"},
    {"role": "user", "content": "issue"},
    {"role": "assistant", "content": "look", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "open", "arguments": "{\"path\":\"a.py\"}"}}]},
    {"role": "tool", "content": "[File: a.py]", "tool_call_ids": ["c1"]},
    {"role": "assistant", "content": "fix", "tool_calls": [
        {"id": "c2", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]},
]}
SWE_TEXT = {"trajectory": [], "history": [
    {"role": "system", "content": "SETTING"},
    {"role": "user", "content": "issue"},
    {"role": "assistant", "content": "thought\n```\nfind_file x.py\n```", "thought": "thought", "action": "find_file x.py\n"},
    {"role": "user", "content": "Found 1 match"},
    {"role": "assistant", "content": "```\npython x.py\n```", "thought": "", "action": "python x.py"},
    {"role": "user", "content": "Traceback (most recent call last)"},
    {"role": "assistant", "content": "done"},
    "junk",
]}


def test_swe_agent_function_calling_and_text_actions():
    t = read_text(json.dumps(SWE_FC))
    assert t.format == "swe-agent" and t.provider == "openai"
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [c.index for c in t.calls] == [2, 4]
    t = read_text(json.dumps(SWE_TEXT))
    assert t.malformed == 1
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    names = [m["tool_calls"][0]["function"]["name"] for m in t.messages if m.get("tool_calls")]
    assert names == ["find_file", "bash"]
    assert t.messages[5]["content"] == "Traceback (most recent call last)"


def test_request_body_prefixes_end_with_the_whole_body():
    body = {"model": "m", "system": "s", "messages": [
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}
    t = read_text(json.dumps(body))
    assert t.format == "request" and t.provider == "anthropic"
    assert [c.index for c in t.calls] == [1, 3]
    assert t.request(1) == body


def test_a_responses_body_marks_a_call_at_each_model_reply():
    body = {"model": "gpt-5.5", "instructions": "i", "input": [
        {"type": "message", "role": "user", "content": "a"},
        {"type": "reasoning", "summary": [], "encrypted_content": "e"},
        {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "x"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        {"type": "message", "role": "user", "content": "thanks"}]}
    t = read_text(json.dumps(body))
    assert t.format == "request" and t.provider == "openai-responses" and t.head == {"model": "gpt-5.5", "instructions": "i"}
    assert [c.index for c in t.calls] == [1, 4, 6]
    assert t.request(2) == body


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_forced_format_reads_garbage_without_raising(name):
    text = '{"messages": 5, "history": 3, "info": 1}' if name in ("opencode", "swe-agent", "request") else "nope\n[1]\n"
    try:
        t = read_text(text, name)
    except UnknownFormat:
        return
    assert t.messages == [] or t.malformed


def test_unknown_content_and_format_names_are_clear_errors():
    with pytest.raises(UnknownFormat, match="not a session format"):
        read_text("hello\nworld\n")
    with pytest.raises(UnknownFormat, match="unknown format"):
        read_text(CLAUDE_CODE, "word")


def test_format_override_beats_detection():
    # a request body forced through the SWE-agent reader has no history: nothing to replay
    t = read_text(json.dumps({"messages": [{"role": "user", "content": "x"}], "history": []}), "swe-agent")
    assert t.format == "swe-agent" and t.messages == []


def test_results_of_every_format_are_tool_results():
    for text in (CLAUDE_CODE, FLAT, CODEX, json.dumps(OPENCODE), CRAFT, json.dumps(SWE_FC)):
        t = read_text(text)
        request = from_provider(t.whole(), t.provider)
        kinds = {b.kind for m in request.messages for b in m.blocks}
        assert TOOL_USE in kinds and TOOL_RESULT in kinds, t.format
