"""nudges: reminders in the newest message only, replayed cooldowns, cache stability turn by turn."""

from __future__ import annotations

from dataclasses import replace

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import from_provider
from compress.model import TEXT, Block
from compress.runner.message_tokens import MessageTokens
from compress.runner.pipeline import Chain, run
from compress.stagekit.stage import PendingOriginals, StageContext
from compress.stages import nudges
from compress.stages.nudges import CHECKPOINT_NUDGE, Options, memory_nudge, memory_nudges, nudge_text
from compress.state.session import Session
from compress.tiers import Tier, TierThresholds
from compress.token_counters import estimate_tokens

MEDIUM = CompressConfig(tiers=TierThresholds(medium=1, high=10**9), protect_tail_tokens=0, protect_tail_turns=1,
                        epoch_savings_threshold=10**9)
HIGH = CompressConfig(tiers=TierThresholds(medium=1, high=2), protect_tail_tokens=0, protect_tail_turns=1,
                      epoch_savings_threshold=10**9)
NEUTRAL = "Reading the file now."
BUILD_LOG = "\n".join(f"[build] step {i}: compiling src/module_{i}.c ... ok" for i in range(120))
"""A build's log, long enough that decide_on_arrival cuts it when it arrives: a request that
carries it is sent smaller than raw, with room for a reminder."""


def turn(n: int, text: str = NEUTRAL, tool: str = "Read", output: str = "") -> list[dict]:
    """One assistant turn with a tool call and the user message holding its result."""
    return [
        {"role": "assistant", "content": [{"type": "text", "text": text},
                                          {"type": "tool_use", "id": f"t{n}", "name": tool, "input": {"n": n}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": output or f"output {n}"}]},
    ]


def conversation(texts: list[str], first: str = "please fix the build", log: bool = False) -> dict:
    """A person's prompt, then one turn per text; `log`: the first turn runs the build, whose
    long log the pipeline cuts (so a reminder fits under raw)."""
    messages: list[dict] = [{"role": "user", "content": first}]
    for n, text in enumerate(texts, 1):
        messages += turn(n, text, "Bash", BUILD_LOG) if log and n == 1 else turn(n, text)
    return {"model": "m", "system": "", "messages": messages}


def canonical(body: dict) -> list:
    return list(from_provider(body).messages)


def test_reminds_of_english_and_chinese_decisions_constraints_and_fixes():
    opts = Options()
    cases = {
        "We decided to use SQLite instead of Postgres.": ("decision",),
        "我们决定改为使用 SQLite。": ("decision",),
        "不要修改 config.toml，必须保留旧格式。": ("constraint",),
        "The root cause was a stale lock file; fixed it.": ("fix",),
        "我修复了这个问题，原因是缓存没有清理。": ("fix",),
    }
    for text, kinds in cases.items():
        messages = canonical(conversation([NEUTRAL, text]))
        assert memory_nudges(messages, opts) == {len(messages) - 1: kinds}, text
    assert memory_nudges(canonical(conversation([NEUTRAL, NEUTRAL])), opts) == {}
    assert 'memory_store(type="gotcha"' in memory_nudge(("fix",))
    assert memory_nudge(("decision", "fix")).startswith("[ctxmill: recent turns hold a decision and a fix")


def test_user_constraint_counts_and_memory_call_clears_it():
    body = conversation([NEUTRAL], first="Never push to main; 不要动生产数据库。")
    messages = canonical(body)
    assert memory_nudges(messages, Options())[0] == ("constraint",)
    saved = conversation(["We decided to vendor the parser."])
    saved["messages"][1]["content"][1]["name"] = "mcp__ctxmill__memory_store"
    assert memory_nudges(canonical(saved), Options()) == {}


def test_cooldown_and_window_are_replayed_from_the_messages():
    texts = [NEUTRAL] * 12
    texts[0] = texts[2] = texts[7] = "We decided to keep the old API."
    messages = canonical(conversation(texts))
    given = memory_nudges(messages, Options(window_turns=2, cooldown_turns=6))
    assert [messages[i].turn for i in given] == [1, 8]  # turn 3 falls in the cooldown
    assert memory_nudges(messages, Options(cooldown_turns=1)).keys() == given.keys() | {
        i for i, m in enumerate(messages) if m.turn == 3 and m.role == "user"}
    late = canonical(conversation(["We decided to keep the old API."] + [NEUTRAL] * 3))
    assert nudge_text(late, Tier.MEDIUM, Options()) == ""  # already reminded at turn 1, now stale


def test_only_user_newest_messages_get_a_nudge_openai_tool_results_are_left_alone():
    openai = {"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "We decided to use SQLite.",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": BUILD_LOG},
    ]}
    assert nudge_text(canonical(openai), Tier.HIGH, Options()) == ""
    prefill = conversation(["We decided to use SQLite."])
    prefill["messages"].append({"role": "assistant", "content": "Sure"})
    assert nudge_text(canonical(prefill), Tier.HIGH, Options()) == ""
    openai["messages"] += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "我们决定不要用 Redis。"}]
    result = run(openai, session=Session.memory(), store=CCRStore.in_memory(), config=MEDIUM)
    assert result.body["messages"][-1]["content"] == [
        {"type": "text", "text": "我们决定不要用 Redis。"}, {"type": "text", "text": memory_nudge(("decision", "constraint"))}]


def test_checkpoint_reminder_at_high_tier_every_n_turns():
    body = conversation([NEUTRAL] * 10, log=True)
    messages = canonical(body)
    assert nudge_text(messages, Tier.HIGH, Options()) == CHECKPOINT_NUDGE
    assert nudge_text(messages, Tier.MEDIUM, Options()) == ""
    assert nudge_text(messages[:-2], Tier.HIGH, Options()) == ""
    out = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=HIGH).body
    assert out["messages"][-1]["content"][-1] == {"type": "text", "text": CHECKPOINT_NUDGE}


def test_no_reminder_while_a_thinking_turn_is_open():
    """A text block appended to a tool-result message ends the provider's thinking turn, which
    drops the thinking before it and makes the provider write the request again: wait."""
    decided = "We decided to use SQLite instead of Postgres."
    body = conversation([NEUTRAL] * 9 + [decided])
    thinking = {"type": "thinking", "thinking": "weighing the options", "signature": "sig"}
    body["messages"][-2]["content"].insert(0, thinking)
    messages = canonical(body)
    assert memory_nudges(messages, Options()) == {}
    assert nudge_text(messages, Tier.HIGH, Options()) == ""
    assert memory_nudges(canonical(conversation([NEUTRAL] * 9 + [decided])), Options())
    # the person's next message ends the thinking turn anyway: the reminder comes with it
    answered = canonical({**body, "messages": body["messages"] + [
        {"role": "assistant", "content": "Done."}, {"role": "user", "content": "ok, go on"}]})
    assert nudge_text(answered, Tier.MEDIUM, Options()) == memory_nudge(("decision",))


def test_pipeline_appends_one_block_to_the_newest_message_and_nothing_else():
    body = conversation([NEUTRAL, "The fix is to pin the version."], log=True)
    result = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=MEDIUM)
    without = run(body, session=Session.memory(), store=CCRStore.in_memory(),
                  config=replace(MEDIUM, disabled_stages=("nudges",))).body["messages"]
    out = result.body["messages"]
    assert out[:-1] == without[:-1] and out[1:-1] != body["messages"][1:-1]  # the build log was cut
    newest, original = out[-1]["content"], body["messages"][-1]["content"]
    assert newest[:-1] == original and newest[-1]["text"] == memory_nudge(("fix",))
    assert body["messages"][-1]["content"] is original and len(original) == 1  # the client's body is untouched
    assert result.report.stages_saved["nudges"] < 0 and not result.report.errors
    assert result.report.tokens_after < result.report.tokens_before


# -------------------------------------------------------------- never above raw

def test_no_reminder_when_the_request_would_not_be_smaller_than_raw():
    """Short sessions at the medium tier where nothing pays to cut (JiriMachynka emberyx,
    xiaomoziyi payment-kit): the reminder alone would send more than raw."""
    body = conversation([NEUTRAL, "The fix is to pin the version."])
    assert memory_nudges(canonical(body), Options())  # a reminder is due
    result = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=MEDIUM)
    assert result.body is body
    assert result.report.tokens_after == result.report.tokens_before
    assert any("held a reminder back" in d for _, _, d in result.report.decisions)


def test_stripped_old_thinking_pays_for_no_reminder():
    """Old thinking the provider drops anyway (before the person's last message) is billed on
    neither side: stripping it saves nothing real, so it cannot pay for a reminder (xiaomoziyi
    19-payment-kit: an epoch that only stripped reasoning carried a reminder, 1.000 -> 1.001)."""
    thinking = {"type": "thinking", "thinking": "Weighing the options for the store. " * 60, "signature": "sig"}
    body = {"model": "m", "system": "", "messages": [
        {"role": "user", "content": "please fix the build"},
        {"role": "assistant", "content": [thinking, {"type": "text", "text": "Done."}]},
        {"role": "user", "content": "go on"},
        {"role": "assistant", "content": [{"type": "text", "text": "Sure."}]},
        {"role": "user", "content": "We decided to keep SQLite; go on."},
    ]}
    result = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=MEDIUM)
    assert result.report.stages_saved.get("strip_reasoning", 0) > 100  # the thinking went
    assert "memory_store" not in orjson.dumps(result.body["messages"][-1]).decode()
    assert any("held a reminder back" in d for _, _, d in result.report.decisions)


def test_a_decision_in_the_first_prompt_is_reminded_of_in_the_first_request_that_saves():
    """The person's first prompt states a decision; its request has nothing to cut, so the
    reminder is held back, and the cue stays pending: the next request, which cuts a build log,
    carries it (were the held-back reminder counted as given, the cooldown would drop it)."""
    session, store = Session.memory(), CCRStore.in_memory()
    first = conversation([], first="We decided to keep SQLite instead of Postgres.")
    held = run(first, session=session, store=store, config=MEDIUM)
    assert held.body is first and any("held a reminder back" in d for _, _, d in held.report.decisions)
    second = conversation([NEUTRAL], first="We decided to keep SQLite instead of Postgres.", log=True)
    out = run(second, session=session, store=store, config=MEDIUM)
    assert out.body["messages"][0] == first["messages"][0]  # the prompt as it was sent
    assert out.body["messages"][-1]["content"][-1] == {"type": "text", "text": memory_nudge(("decision",))}
    assert out.report.tokens_after < out.report.tokens_before
    assert memory_nudges(canonical(second), Options()) == {0: ("decision",)}  # assuming every reminder sent


def test_no_reminder_that_would_push_the_cached_prefix_out_of_the_providers_lookback():
    """Anthropic looks for a cached prefix only `cache_window_blocks` blocks back from a
    request's end. When a request adds just fewer blocks than that since the last one, the
    reminder's block would leave the last request's prefix out of reach and the whole request
    would be written to the cache again (w12z Cap: 83,470 cost units for its last request
    against raw's 8,595, the session above raw): the reminder is held back. One block fewer
    and it is sent."""
    config = replace(MEDIUM, cache_window_blocks=7)
    cue = "The fix is to pin the version."
    for added_turns, nudged in ((2, False), (1, True)):  # 3 blocks a turn: 6 + 1 reach 7, 3 + 1 do not
        session, store = Session.memory(), CCRStore.in_memory()
        first = conversation([NEUTRAL], log=True)
        run(first, session=session, store=store, config=config)
        second = conversation([NEUTRAL] * added_turns + [cue], log=True)  # the first request and `added_turns` more
        assert memory_nudges(canonical(second), Options())  # a reminder is due
        out = run(second, session=session, store=store, config=config)
        assert out.report.tokens_after < out.report.tokens_before  # it would fit under raw
        assert ("memory_store" in orjson.dumps(out.body["messages"][-1]).decode()) is nudged
        assert any("held a reminder back" in d for _, _, d in out.report.decisions) is not nudged


def _context(slack: int, messages: list) -> StageContext:
    """A medium-tier context whose request saved `slack` tokens before this stage."""
    tokens = MessageTokens(estimate_tokens)
    raw = sum(tokens.message(m) for m in messages) + slack
    return StageContext(CompressConfig(), Tier.MEDIUM, 0, (False,) * len(messages), PendingOriginals(),
                        estimate_tokens, saving=lambda out: raw - sum(tokens.message(m) for m in out))


def test_reminder_only_when_what_was_saved_pays_for_it_strictly():
    messages = canonical(conversation([NEUTRAL, "The fix is to pin the version."]))
    reminder = memory_nudge(("fix",))
    cost = MessageTokens(estimate_tokens).block(Block(TEXT, raw={"type": "text", "text": reminder}, text=reminder))
    assert nudges.run(messages, _context(cost, messages)) is messages  # as large as raw: held back
    out = nudges.run(messages, _context(cost + 1, messages))
    assert out[:-1] == messages[:-1] and out[-1].blocks[-1].text == reminder


# -------------------------------------------------------------- cache stability, turn by turn

SCRIPT = [NEUTRAL, "We decided to split the module.", NEUTRAL, "必须先跑测试。", NEUTRAL, NEUTRAL, NEUTRAL,
          "The root cause was a race.", NEUTRAL, NEUTRAL, "我们改为使用队列。", NEUTRAL, NEUTRAL, NEUTRAL]


def test_turn_by_turn_feed_is_cache_stable_and_nudges_stay_where_they_were_given():
    full = conversation(SCRIPT, log=True)["messages"]
    expected = memory_nudges(canonical({"messages": full, "system": ""}), Options())
    session = Session.memory()
    previous: list[bytes] = []
    given_at: list[int] = []
    for end in range(1, len(full) + 1, 2):  # every request ends with the user's message
        body = {"model": "m", "system": "", "messages": full[:end]}
        result = run(body, session=session, store=CCRStore.in_memory(), config=MEDIUM)
        rendered = [orjson.dumps(m) for m in result.body["messages"]]
        assert rendered[:len(previous)] == previous  # request k is a prefix of request k+1
        assert result.report.tokens_after < result.report.tokens_before or end == 1
        retry = run(body, session=session, store=CCRStore.in_memory(), config=MEDIUM)
        assert [orjson.dumps(m) for m in retry.body["messages"]] == rendered
        if len(result.body["messages"][-1]["content"]) > len(full[end - 1]["content"]):
            given_at.append(end - 1)
        previous = rendered
    assert given_at == sorted(expected) and len(given_at) >= 2
    final = [m["content"] for m in orjson.loads(b"[" + b",".join(previous) + b"]")]
    for i in given_at:  # each nudge is still in the message it was given in
        assert final[i][-1]["text"].startswith("[ctxmill: recent turns hold")


_turn_texts = st.lists(st.sampled_from([NEUTRAL, NEUTRAL, "We decided to go.", "不要这样做。", "Fixed it."]),
                       max_size=30)


@settings(max_examples=100, deadline=None)
@given(_turn_texts, st.integers(1, 4), st.integers(1, 8))
def test_property_nudges_are_prefix_stable_cooled_down_and_at_user_ends(texts, window, cooldown):
    opts = Options(window_turns=window, cooldown_turns=cooldown)
    messages = canonical(conversation(texts))
    given = memory_nudges(messages, opts)
    turns = [messages[i].turn for i in sorted(given)]
    assert all(b - a >= cooldown for a, b in zip(turns, turns[1:]))
    assert all(messages[i].role == "user" for i in given)
    for k in range(1, len(messages) + 1):
        if k == len(messages) or messages[k].role == "assistant":
            assert memory_nudges(messages[:k], opts) == {i: v for i, v in given.items() if i < k}


# -------------------------------------------------------------- the runner's newest-message exception

def _stage(fn, appends: bool = True):
    from compress.stagekit.stage import Stage

    return Stage("probe", fn, Tier.ALWAYS, appends_to_newest=appends)


def _append_to(index: int, text: str = "x"):
    from compress.model import TEXT, Block

    def fn(messages, ctx):
        i = index % len(messages)
        msg = messages[i]
        return messages[:i] + [msg.with_blocks(msg.blocks + (Block(TEXT, text=text),))] + messages[i + 1:]
    return fn


def _rewrite_newest(messages, ctx):
    msg = messages[-1]
    return messages[:-1] + [msg.with_blocks((msg.blocks[0].with_result_text("forged"),))]


def test_runner_allows_only_one_appended_text_block_on_the_newest_user_message():
    body = conversation([NEUTRAL, NEUTRAL])
    protected = CompressConfig(protect_tail_tokens=10**6, protect_tail_turns=10)  # nothing is mutable
    old_mutable = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1)
    cases = {
        "append": (_stage(_append_to(-1)), protected, ""),
        "no flag": (_stage(_append_to(-1), appends=False), old_mutable, "changed frozen or protected message 4"),
        "older message": (_stage(_append_to(1)), protected, "changed frozen or protected message 1"),
        "rewrite": (_stage(_rewrite_newest), protected, "other than by appending one text block"),
        "two blocks": (_stage(lambda m, c: _append_to(-1)(_append_to(-1)(m, c), c)), protected,
                       "other than by appending"),
    }
    for name, (stage, config, error) in cases.items():
        result = run(body, session=Session.memory(), store=None, config=config, chain=Chain(()).push(stage))
        if error:
            assert result.body is body and error in result.report.errors[0], name
        else:
            assert result.body["messages"][-1]["content"][-1] == {"type": "text", "text": "x"}, name
    assert run(body, session=Session.memory(), store=None, config=protected,
               chain=Chain(()).push(_stage(_append_to(-1), appends=False))).body is body  # not even run
    prefill = {"model": "m", "system": "", "messages": body["messages"] + [{"role": "assistant", "content": "Sure"}]}
    result = run(prefill, session=Session.memory(), store=None, config=protected,
                 chain=Chain(()).push(_stage(_append_to(-1))))
    assert result.body is prefill and "changed frozen or protected message 5" in result.report.errors[0]


def test_host_injected_reminders_are_not_cues():
    injected = conversation([NEUTRAL], first="<system-reminder>You must never do X. Do not reply.</system-reminder>go on")
    assert memory_nudges(canonical(injected), Options()) == {}


# -------------------------------------------------------------- golden: real sessions, turn by turn

def test_golden_turn_by_turn_on_claude_code_sessions(corpus):
    import sys
    from pathlib import Path


    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from claude_code_requests import claude_code_sessions

    from compress.formats.sessions import read_session

    root = corpus
    # no new epochs: once trimming stages run, a full re-run would save enough to start one
    config = CompressConfig(tiers=TierThresholds(medium=1, high=10**9), epoch_savings_threshold=10**9,
                            window_epoch_savings=10**9)
    total = 0
    for path in claude_code_sessions(root):
        transcript = read_session(path)
        full = transcript.messages
        if not 40 <= len(full) <= 200:
            continue
        expected = memory_nudges(canonical({"messages": full, "system": ""}), Options())
        session, previous, given_at, held = Session.memory(), [], [], []
        for k in range(len(transcript.calls)):  # each model call, as the agent sent it
            body = {"model": "m", "system": "", "messages": transcript.request(k)["messages"]}
            if not body["messages"]:
                continue
            result = run(body, session=session, store=CCRStore.in_memory(), config=config)
            assert not result.report.error and not result.report.errors
            rendered = [orjson.dumps(m) for m in result.body["messages"]]
            assert rendered[:len(previous)] == previous, path.name
            last = result.body["messages"][-1]["content"]
            if isinstance(last, list) and last[-1].get("text", "").startswith("[ctxmill: recent turns"):
                given_at.append(len(body["messages"]) - 1)
            if any("held a reminder back" in d for _, _, d in result.report.decisions):
                held.append(len(body["messages"]) - 1)
            assert result.report.tokens_after <= result.report.tokens_before, path.name
            previous = rendered
        # a reminder is held back only where the request would not be smaller than raw; with none
        # held back, they come exactly where the messages alone put them
        assert not set(given_at) & set(held), path.name
        if not held:
            assert given_at == sorted(expected), path.name
        total += len(given_at)
    assert total >= 1
