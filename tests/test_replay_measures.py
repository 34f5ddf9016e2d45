"""What the replay measures besides modelled cost: needed lines, effective cost, the decide-once
cap, per-provider prices, thinking as the request asks, and the host's real histories."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from compress.formats.requests import SHAPES
from compress.formats.requests.anthropic import keep_all_thinking
from compress.formats.sessions import read_text
from compress.token_counters import get_counter
from replay.by_kind import CHANGE_INPUTS, FILE_READS, USER_TEXT
from replay.cap import KEEP, LIMIT, DecideOnceCap, capped_text
from replay.costmodel import ANTHROPIC, ANTHROPIC_1H, PromptCache, prices_for
from replay.needed import CARRY_CALLS, MessageTexts, Need, Needed, copied_lines, needs_of_call
from replay.pricing import RequestAccountant
from replay.runner import replay

SOURCE = "\n".join(f"    def handler_number_{i}(self, value):" for i in range(200))


def _edit_reply(old: str) -> dict:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": "e1", "name": "Edit",
                                              "input": {"file_path": "a.py", "old_string": old, "new_string": "x"}}]}


def _read_turn(i: int, text: str) -> list[dict]:
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"r{i}", "name": "Read",
                                               "input": {"file_path": "a.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"r{i}", "content": text}]}]


def test_copied_lines_are_the_long_lines_of_old_strings_in_edits_and_multiedits():
    parse = SHAPES["anthropic"].parse_message
    reply = parse({"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "Edit", "input": {"old_string": "  short\n  def keep_this_line():\n"}},
        {"type": "tool_use", "id": "b", "name": "MultiEdit", "input": {"edits": [{"old_string": "return compute(a, b)"}]}},
        {"type": "tool_use", "id": "c", "name": "Bash", "input": {"command": "echo a long command line here"}}]})
    assert copied_lines(reply) == ["def keep_this_line():", "return compute(a, b)"]
    assert copied_lines(parse({"role": "user", "content": "def keep_this_line():"})) == []


def test_needs_carry_the_newest_source_and_its_age_bucket():
    messages = [{"role": "user", "content": "fix it"}, *_read_turn(1, SOURCE), *[
        {"role": "user" if k % 2 else "assistant", "content": f"chatter {k}"} for k in range(12)]]
    reply = SHAPES["anthropic"].parse_message(_edit_reply("def handler_number_7(self, value):"))
    needs = needs_of_call(messages, reply, MessageTexts())
    assert [(n.source, n.bucket) for n in needs] == [(2, "11+")]
    assert needs_of_call(messages, SHAPES["anthropic"].parse_message(_edit_reply("def not_in_context_at_all():")),
                         MessageTexts()) == []


def test_needed_counts_kept_lines_and_prices_a_reread_once_per_call():
    needs = needs_of_call([*_read_turn(1, SOURCE)], SHAPES["anthropic"].parse_message(
        _edit_reply("def handler_number_1(self, value):\ndef handler_number_150(self, value):")), MessageTexts())
    needed = Needed()
    calls = []
    needed.add(needs, "def handler_number_1(self, value):", lambda lost: calls.append(lost) or 10.0, call=1)
    assert needed.total["0-3"] == 2 and needed.kept["0-3"] == 1 and needed.fraction() == 0.5
    assert calls == [{1}] and needed.reread_cost == 10.0 and needed.calls_with_loss == 1
    needed.add(needs, SOURCE, lambda lost: 1 / 0, call=2)  # nothing lost: no re-read priced
    assert needed.fraction() == 0.75


def test_one_reread_of_a_cut_source_brings_back_its_lines_until_it_is_cut_again():
    """Two calls that lose lines of one cut read pay one re-read; once the re-read copy is
    gone (carried CARRY_CALLS calls), a later loss pays another; a new history starts afresh."""
    first, second = (needs_of_call([*_read_turn(1, SOURCE)], SHAPES["anthropic"].parse_message(
        _edit_reply(f"def handler_number_{n}(self, value):")), MessageTexts()) for n in (100, 150))
    needed = Needed()
    paid: list[set[int]] = []
    reread = lambda lost: paid.append(lost) or 10.0  # noqa: E731
    needed.add(first, "", reread, call=1)
    needed.add(second, "", reread, call=1 + CARRY_CALLS)
    assert paid == [{1}] and needed.rereads == 1 and needed.calls_with_loss == 2 and needed.reread_cost == 10.0
    needed.add(first, "", reread, call=2 + CARRY_CALLS)  # the re-read copy was cut again
    assert paid == [{1}, {1}] and needed.rereads == 2 and needed.reread_cost == 20.0
    needed.new_history()  # message 1 of the next history is another message
    needed.add(second, "", reread, call=3 + CARRY_CALLS)
    assert needed.rereads == 3 and needed.to_dict()["rereads"] == 3


def test_cap_keeps_head_and_tail_of_long_results_only():
    assert capped_text("x" * LIMIT) == "x" * LIMIT
    text = "a" * KEEP + "b" * 1234 + "c" * KEEP
    out = capped_text(text)
    assert out.startswith("a" * KEEP) and out.endswith("c" * KEEP) and "1,234 characters cut" in out
    assert "b" not in out.replace("characters cut", "")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=6000), min_size=1, max_size=8))
def test_cap_is_append_only_request_after_request(sizes):
    messages = [{"role": "user", "content": "go"}]
    for i, n in enumerate(sizes):
        messages += _read_turn(i, "y" * n)
    cap = DecideOnceCap("anthropic")
    previous: list = []
    for end in range(1, len(messages) + 1):
        out = cap({"messages": messages[:end]})["messages"]
        assert json.dumps(out[: len(previous)]) == json.dumps(previous)
        previous = out
    assert all(len(json.dumps(m)) < LIMIT + 400 for m in previous)


def test_prices_follow_the_provider_and_model():
    assert prices_for("anthropic") == ANTHROPIC and prices_for("anthropic", cache_ttl="1h") == ANTHROPIC_1H
    assert ANTHROPIC.write == 1.25 and ANTHROPIC_1H.write == 2.0 and ANTHROPIC.lookback == 20
    gpt5 = prices_for("openai", "gpt-5-codex")
    assert (gpt5.read, gpt5.write, gpt5.lookback) == (0.1, 1.0, None)
    assert prices_for("openai", "gpt-4o-mini").read == 0.5 and prices_for("openai", "").read == 0.5


def test_openai_prefix_is_found_beyond_twenty_blocks():
    limited, anywhere = PromptCache(20), PromptCache(None)
    first = list(range(5))
    for cache in (limited, anywhere):
        cache.add(first, [10] * 5)
    longer = first + list(range(100, 130))
    assert limited.add(longer, [10] * 35).read == 0
    assert anywhere.add(longer, [10] * 35).read == 50


def test_thinking_counts_in_every_turn_when_the_request_keeps_it():
    body = {"messages": [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "deep thought " * 200, "signature": "s"},
                                          {"type": "text", "text": "ok"}]},
        {"role": "user", "content": "second"}]}
    keep_all = {**body, **keep_all_thinking()}
    counter = get_counter()
    latest = RequestAccountant("anthropic", counter).add(body).tokens
    assert RequestAccountant("anthropic", counter).add(keep_all).tokens > latest + 300
    assert RequestAccountant("anthropic", counter, thinking="all").add(body).tokens == \
        RequestAccountant("anthropic", counter).add(keep_all).tokens
    assert RequestAccountant("anthropic", counter, thinking="latest").add(keep_all).tokens == latest


def test_sent_blocks_split_a_requests_price_between_cache_reads_and_writes():
    """The blocks `sent_blocks` names, priced at the read price up to `read_blocks` and at the
    write price after, plus the head, make up the request's cost; thinking the provider drops
    is not among them."""
    counter = get_counter()
    first = {"system": "you are terse", "messages": [{"role": "user", "content": "first"},
                                                     {"role": "assistant", "content": "ok"}]}
    second = {**first, "messages": first["messages"] + [
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm " * 50, "signature": "s"},
                                          {"type": "text", "text": "done"}]},
        {"role": "user", "content": "third"}]}
    accountant = RequestAccountant("anthropic", counter)
    head = counter.count('{"system":"you are terse"}')
    for body, read_blocks, head_price in ((first, 0, ANTHROPIC.write), (second, 2, ANTHROPIC.read)):
        priced = accountant.add(body)
        assert priced.cache.read_blocks == read_blocks
        spent = sum((ANTHROPIC.read if k < read_blocks else ANTHROPIC.write) * n
                    for k, (_, _, n) in enumerate(accountant.sent_blocks(body)))
        assert abs(priced.cost - spent - head_price * head) < 1e-6
    assert [(i, j) for i, j, _ in accountant.sent_blocks(second)] == [(0, 0), (1, 0), (2, 0), (3, 1), (4, 0)]


def _claude_line(uuid, parent, kind, content, **extra):
    line = {"uuid": uuid, "parentUuid": parent, "sessionId": "s", "type": kind,
            "message": {"role": kind, "content": content}, **extra}
    if kind == "assistant":
        line["message"]["id"] = f"msg-{uuid}"
    return json.dumps(line)


COMPACTED = "\n".join([
    _claude_line("u1", None, "user", "build the parser"),
    _claude_line("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "p.py"}}]),
    _claude_line("u2", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": SOURCE}]),
    _claude_line("a2", "u2", "assistant", [{"type": "text", "text": "read it"}]),
    json.dumps({"uuid": "b1", "parentUuid": None, "logicalParentUuid": "a2", "sessionId": "s", "type": "system",
                "subtype": "compact_boundary"}),
    _claude_line("s1", "b1", "user", "Summary: we read p.py and plan the parser.", isCompactSummary=True),
    _claude_line("u3", "s1", "user", "go on"),
    _claude_line("a3", "u3", "assistant", [{"type": "text", "text": "continuing"}]),
])


def test_a_compaction_starts_a_history_whose_first_message_is_the_summary():
    transcript = read_text(COMPACTED, "claude-code")
    first, second = transcript.segments()
    assert [c.index for c in first.calls] == [1, 3] and first.messages == transcript.messages[:4]
    assert second.messages[0]["content"][0]["text"].startswith("Summary:")
    assert second.messages[1:] == transcript.messages[4:] and [c.index for c in second.calls] == [2]
    assert second.request(0)["messages"][-1]["content"] == [{"type": "text", "text": "go on"}]


def test_replay_follows_the_hosts_histories_unless_glued():
    transcript = read_text(COMPACTED, "claude-code")
    real, glued = replay(transcript), replay(transcript, glued=True)
    assert real.requests == glued.requests == 3
    assert real.raw.tokens_peak < glued.raw.tokens_sum - real.raw.tokens_sum + real.raw.tokens_peak
    assert not real.glued and glued.glued and "histories as the host sent them" in real.render()


def test_effective_cost_adds_rereads_only_for_lost_needed_lines():
    session = [{"role": "user", "content": "edit the handler"}, *_read_turn(1, SOURCE),
               _edit_reply("def handler_number_100(self, value):"),
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "e1", "content": "ok"}]}]
    report = replay(read_text(json.dumps({"messages": session}), "request"))
    cap, raw = report.cap, report.raw
    assert raw.needed.fraction() == 1.0 and raw.effective_cost == raw.cost
    assert cap.needed.fraction() == 0.0 and cap.needed.calls_with_loss == 1  # line 100 was in the cut middle
    assert cap.effective_cost > cap.cost


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=1, max_value=4), st.frozensets(st.integers(0, 3), max_size=3)),
                max_size=30))
def test_a_source_is_re_read_only_when_its_last_re_read_is_no_longer_carried(calls):
    """Every call that loses a source holds it from a re-read at most CARRY_CALLS calls
    before, and two re-reads of one source are more than CARRY_CALLS calls apart."""
    needed, call, fetched = Needed(), 0, []
    for gap, sources in calls:
        call += gap
        needs = [Need(f"line {s}", s, "11+") for s in sorted(sources)]
        needed.add(needs, "", lambda lost, at=call: fetched.extend((at, s) for s in lost) or len(lost), call=call)
        for source in sources:
            last = max(at for at, s in fetched if s == source)
            assert call - CARRY_CALLS <= last <= call
    for source in range(4):
        times = [at for at, s in fetched if s == source]
        assert all(b - a > CARRY_CALLS for a, b in zip(times, times[1:]))
    assert needed.rereads == len(fetched) == needed.reread_cost


def test_a_side_pays_one_reread_for_edits_that_copy_from_one_cut_read_in_a_row():
    """Every side alike: the cap cut the read's middle; three edits in a row copy from it and
    the agent re-reads it once."""
    session = [{"role": "user", "content": "edit the handlers"}, *_read_turn(1, SOURCE)]
    for n in (100, 101, 102):
        reply = _edit_reply(f"def handler_number_{n}(self, value):")
        reply["content"][0]["id"] = f"e{n}"
        session += [reply, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"e{n}", "content": "ok"}]}]
    cap = replay(read_text(json.dumps({"messages": session}), "request")).cap
    assert cap.needed.fraction() == 0.0 and cap.needed.calls_with_loss == 3
    assert cap.needed.rereads == 1


def test_replay_by_kind_splits_each_sides_cost_by_kind_of_content():
    """The kinds add up to each side's modelled cost; the file read is where raw and the cap
    differ, and the edit's input counts as a file-changing input."""
    session = [{"role": "user", "content": "edit the handler"}, *_read_turn(1, SOURCE),
               _edit_reply("def handler_number_100(self, value):")]
    report = replay(read_text(json.dumps({"messages": session}), "request"), by_kind=True)
    assert set(report.by_kind) == {"raw", "cap", "ctxmill"}
    for name, side in report.sides().items():
        assert abs(sum(report.by_kind[name].values()) - side.cost) < 0.1  # costs are rounded
    raw, cap = report.by_kind["raw"], report.by_kind["cap"]
    assert cap[FILE_READS] < raw[FILE_READS] / 2
    assert cap[USER_TEXT] == raw[USER_TEXT] > 0 and cap[CHANGE_INPUTS] == raw[CHANGE_INPUTS] > 0
    assert "cost by kind of content" in report.render() and "by_kind" in report.to_dict()
    assert replay(read_text(json.dumps({"messages": session}), "request")).by_kind == {}
