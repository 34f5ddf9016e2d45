"""The engine on requests shaped like Claude Code 2.1's (tests/cc21.py): system messages inside
`messages`, every earlier thinking block kept (`clear_thinking_20251015`, `keep: "all"`), 1M windows."""

from __future__ import annotations

import copy

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import from_provider, keeps_all_thinking
from compress.model import newest_user_index
from compress.provider_cache import first_dropped_thinking, provider_blocks
from compress.runner.epochs import epoch_trial
from compress.runner.pipeline import Chain, run
from compress.stagekit.stage import Stage
from compress.stages.nudges import memory_nudge
from compress.state.session import Session, known_prefix, prefix_hashes
from compress.tiers import REFERENCE_WINDOW, Tier, TierThresholds
from tests import cc21

DECIDED = "We decided to keep SQLite instead of Postgres for the cache."
MEDIUM = CompressConfig(tiers=TierThresholds(medium=1, high=10**9), protect_tail_tokens=0, protect_tail_turns=1)


def session_of(n_turns: int, *, keep_all: bool = True, hook: str = "memory: use SQLite") -> list[dict]:
    messages = [cc21.prompt("The build fails; fix it."), cc21.host_context(hook)]
    for n in range(n_turns):
        messages += cc21.tool_turn(n)
    return messages


def canonical(body: dict) -> list:
    return list(from_provider(body).messages)


# ---------------------------------------------------------------- system messages inside `messages`

def test_the_shape_reads_system_messages_and_the_keep_all_edit():
    body = cc21.body(session_of(2))
    messages = canonical(body)
    assert [m.role for m in messages[:3]] == ["user", "system", "assistant"]
    assert keeps_all_thinking("anthropic", body)
    assert not keeps_all_thinking("anthropic", cc21.body(session_of(2), keep_all=False))
    assert not keeps_all_thinking("anthropic", {**body, "context_management": {"edits": [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}]}})
    assert not keeps_all_thinking("openai", {"messages": [], "context_management": cc21.KEEP_ALL})


def test_newest_user_message_is_found_behind_trailing_system_messages():
    first = canonical(cc21.body([cc21.prompt("go"), cc21.host_context("x")]))
    assert newest_user_index(first) == 0
    loop = canonical(cc21.body(session_of(2)))
    assert newest_user_index(loop) == len(loop) - 1
    prefill = canonical(cc21.body(session_of(1) + [cc21.final("Sure")]))
    assert newest_user_index(prefill) == -1


def test_no_stage_changes_a_system_message_even_outside_the_protected_tail():
    """Every stage at every tier, nothing protected: the host's system message (with hook output,
    and an injected-looking reminder) comes back byte for byte, while old outputs are cut."""
    messages = session_of(6)
    messages[1]["content"] += "\n<system-reminder>" + "hook memory line\n" * 300 + "</system-reminder>"
    body = cc21.body(messages)
    config = CompressConfig(tiers=TierThresholds(medium=1, high=2), protect_tail_tokens=0, protect_tail_turns=1)
    out = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=config).body
    assert out["messages"][1] == body["messages"][1]
    assert len(orjson.dumps(out)) < len(orjson.dumps(body)) * 0.6  # the old build logs were trimmed


def test_the_guard_drops_a_stage_that_edits_a_system_message():
    def rewrite_system(messages, ctx):
        return [m.with_blocks([b.with_text("rewritten") for b in m.blocks]) if m.role == "system" else m
                for m in messages]

    body = cc21.body(session_of(4))
    config = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1)
    result = run(body, session=Session.memory(), store=None, config=config,
                 chain=Chain(()).push(Stage("rewrite_system", rewrite_system)))
    assert result.body is body
    assert "changed system message 1" in result.report.errors[0]


def test_a_nudge_goes_to_the_prompt_before_the_hook_context_and_stays_there():
    """A later prompt arrives as [user prompt, system hook context]: the nudge is appended to the
    prompt, and on the next request that message renders byte for byte the same."""
    history = session_of(2) + [cc21.final("Done.")]
    first = history + [cc21.later_prompt(DECIDED), cc21.host_context("memory hit")]
    session, store = Session.memory(), CCRStore.in_memory()
    out1 = run(cc21.body(first), session=session, store=store, config=MEDIUM).body
    prompt_out = out1["messages"][-2]
    assert prompt_out["content"][-1]["text"] == memory_nudge(("decision",))
    assert out1["messages"][-1] == first[-1]  # the system message itself is untouched
    second = first + cc21.tool_turn(10)
    out2 = run(cc21.body(second), session=session, store=store, config=MEDIUM).body
    assert out2["messages"][len(first) - 2] == prompt_out
    assert orjson.dumps(out2["messages"][:len(first) - 1]) == orjson.dumps(out1["messages"][:len(first) - 1])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["tool", "prompt", "final"]), min_size=1, max_size=12), st.booleans())
def test_stages_keep_pairing_roles_and_system_messages_on_any_cc21_conversation(steps, keep_all):
    messages = [cc21.prompt("go"), cc21.host_context("ctx")]
    n = 0
    for step in steps:
        if step == "tool":
            messages += cc21.tool_turn(n, text=DECIDED if n % 3 == 0 else "")
            n += 1
        elif step == "final" and messages[-1]["role"] != "assistant":
            messages.append(cc21.final(f"Done {n}."))
        elif step == "prompt" and messages[-1]["role"] == "assistant":
            messages += [cc21.later_prompt(DECIDED), cc21.host_context(f"ctx {n}")]
    body = cc21.body(messages, keep_all=keep_all)
    config = CompressConfig(tiers=TierThresholds(medium=1, high=2), protect_tail_tokens=0, protect_tail_turns=1)
    out = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=config)
    assert not out.report.errors
    sent = out.body["messages"]
    assert [m["role"] for m in sent] == [m["role"] for m in messages]
    assert [m for m in sent if m["role"] == "system"] == [m for m in messages if m["role"] == "system"]
    for a, b in zip(messages, sent):
        ids = lambda m: [(x.get("type"), x.get("id"), x.get("tool_use_id"))  # noqa: E731
                         for x in m["content"] if isinstance(m["content"], list) and x.get("type") != "text"
                         and x.get("type") != "thinking"]
        assert ids(a) == ids(b)


# ---------------------------------------------------------------- thinking kept (keep: "all")

def test_kept_thinking_counts_in_every_message_and_is_never_dropped():
    messages = session_of(3) + [cc21.final("Done."), cc21.later_prompt("next"), cc21.host_context()]
    canon = canonical(cc21.body(messages))
    with_thinking = [i for i, m in enumerate(canon) if m.has_thinking]
    classic = provider_blocks(canon)
    kept = provider_blocks(canon, thinking_kept=True)
    assert all(kept[i] == classic[i] + 1 for i in with_thinking)
    sent = len(canon) - 2  # the new prompt and its system message are new
    assert first_dropped_thinking(canon, sent) == with_thinking[0]
    assert first_dropped_thinking(canon, sent, thinking_kept=True) == len(canon)


def test_a_new_prompt_is_no_free_epoch_when_thinking_is_kept():
    """Classic thinking: a new prompt makes the provider drop the last turn's thinking, so the
    whole request is written anyway and a re-run from the start is free. Kept thinking: the
    cached request is still read, so an epoch must pay for what it writes again."""
    config = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1, protect_tail_blocks=0)
    before = session_of(3) + [cc21.final("Done.")]
    after = before + [cc21.later_prompt("next"), cc21.host_context()]
    for keep_all, free in ((False, True), (True, False)):
        session = Session.memory()
        run(cc21.body(before, keep_all=keep_all), session=session, store=CCRStore.in_memory(), config=config)
        canon = canonical(cc21.body(after, keep_all=keep_all))
        blocks = provider_blocks(canon, keep_all)
        messages = cc21.body(after, keep_all=keep_all)["messages"]
        hashes = prefix_hashes(messages)
        frozen = known_prefix(hashes, session.records, messages)  # the moved cache breakpoint: len(before) - 1
        choice = epoch_trial(canon, blocks, frozen, len(canon) - 1, session, hashes, config, thinking_kept=keep_all)
        is_free = choice is not None and choice.start == 0 and choice.read_end == 0
        assert is_free is free, (keep_all, choice)


def test_a_request_whose_thinking_the_provider_drops_now_is_no_longer_a_cached_prefix(tmp_path):
    """Classic thinking: after a new prompt the provider gets the earlier turns without their
    thinking, so the requests that ended after the first such turn are no longer a prefix of
    anything it will be sent; the session forgets them (and a window epoch never counts on
    them), and the state on disk says so too. Kept thinking: they stay cached prefixes."""
    config = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1, protect_tail_blocks=0)
    before = session_of(3) + [cc21.final("Done.")]
    after = before + [cc21.later_prompt("next"), cc21.host_context()]
    for keep_all in (False, True):
        where = tmp_path / str(keep_all)
        for messages in (before, after):
            with Session.open(where) as session:
                result = run(cc21.body(messages, keep_all=keep_all), session=session, store=CCRStore.in_memory(),
                             config=config)
        assert result.report.mode == "incremental"
        first_thinking = next(i for i, m in enumerate(canonical(cc21.body(after))) if m.has_thinking)
        ends = Session.load(where).request_ends
        assert ends == session.request_ends
        assert (len(before) in ends) is keep_all
        assert keep_all or all(e <= first_thinking for e in ends if e < len(after))


def test_old_thinking_is_stripped_only_when_an_epoch_decides_and_stays_byte_stable_between():
    """Kept thinking is real context: stripping it is a cache rewrite. It happens in an epoch (here
    the first run), and the next requests render that prefix byte for byte as before."""
    config = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1)
    messages = session_of(3) + [cc21.final("Done."), cc21.later_prompt("now the docs"), cc21.host_context()]
    session, store = Session.memory(), CCRStore.in_memory()
    first = run(cc21.body(messages), session=session, store=store, config=config)
    assert first.report.mode == "epoch"
    thinking_left = [i for i, m in enumerate(first.body["messages"])
                     if m["role"] == "assistant" and any(b["type"] == "thinking" for b in m["content"])]
    assert thinking_left == [len(messages) - 3]  # only the latest assistant message (protected tail) keeps it
    nxt = messages + cc21.tool_turn(20)
    second = run(cc21.body(nxt), session=session, store=store, config=config)
    assert second.report.mode == "incremental"
    assert orjson.dumps(second.body["messages"][:len(messages) - 1]) == orjson.dumps(first.body["messages"][:-1])


def test_nudges_do_not_wait_for_an_open_thinking_turn_when_thinking_is_kept():
    messages = session_of(1) + cc21.tool_turn(5, text=DECIDED)
    for keep_all, nudged in ((False, False), (True, True)):
        out = run(cc21.body(messages, keep_all=keep_all), session=Session.memory(), store=CCRStore.in_memory(),
                  config=MEDIUM).body
        last = out["messages"][-1]["content"][-1]
        assert (last.get("text") == memory_nudge(("decision",))) is nudged


# ---------------------------------------------------------------- 1M windows

def test_tiers_scale_with_a_known_context_window():
    t = TierThresholds(medium=50_000, high=150_000)
    assert t.for_window(None) is t and t.for_window(REFERENCE_WINDOW) is t
    million = t.for_window(1_000_000)
    assert (million.medium, million.high) == (50_000, 750_000)
    assert million.tier_for(200_000) == Tier.MEDIUM and t.tier_for(200_000) == Tier.HIGH
    small = t.for_window(128_000)
    assert (small.medium, small.high) == (50_000, 96_000)
    assert TierThresholds(medium=90_000, high=100_000).for_window(128_000) == TierThresholds(64_000, 64_000)


def test_a_1m_window_request_stays_below_high_where_a_200k_one_is_high():
    messages = session_of(40)  # ~300K tokens of build logs
    body = {**cc21.body(messages), "model": "claude-opus-4-6"}  # a 200K window unless the request says 1M
    plain = run(copy.deepcopy(body), session=Session.memory(), store=CCRStore.in_memory())
    million = run(copy.deepcopy(body), session=Session.memory(), store=CCRStore.in_memory(), context_window=1_000_000)
    assert 250_000 <= plain.report.tokens_before < 750_000
    assert plain.report.tier == "high"
    assert million.report.tier == "medium"
    # Opus 4.8 (cc21's model) and the Claude 5 models read 1M tokens without the beta.
    for model in ("claude-opus-4-8", "claude-opus-5-5"):
        native = run({**copy.deepcopy(body), "model": model}, session=Session.memory(), store=CCRStore.in_memory())
        assert native.report.tier == "medium", model
    overridden = CompressConfig(model_tiers={"claude-opus": TierThresholds(medium=10, high=20)})
    forced = run(copy.deepcopy(body), session=Session.memory(), store=CCRStore.in_memory(), config=overridden,
                 context_window=1_000_000)
    assert forced.report.tier == "high"  # per-model overrides are absolute


# ---------------------------------------------------------------- the moving cache breakpoint

def _marks(body: dict) -> list[tuple[int, int]]:
    return [(i, j) for i, m in enumerate(body["messages"]) if isinstance(m["content"], list)
            for j, b in enumerate(m["content"]) if "cache_control" in b]


def test_a_moved_cache_breakpoint_keeps_the_prefix_known_and_only_the_clients_marks_go_out():
    """Claude Code marks the last block of the last message, a different one each request. The
    session must still know the prefix (no epoch, byte-stable), and the output must carry the
    client's marks of this request only (the API rejects more than four)."""
    config = CompressConfig(tiers=TierThresholds(medium=10**8, high=10**9), protect_tail_turns=100)
    session, store = Session.memory(), CCRStore.in_memory()
    messages = session_of(4)
    outs = []
    for extra in range(4):
        messages = messages + cc21.tool_turn(10 + extra)
        body = cc21.body(messages)
        result = run(body, session=session, store=store, config=config)
        assert _marks(result.body) == _marks(body) == [(len(messages) - 1, 0)]
        outs.append(result)
    assert [r.report.mode for r in outs[1:]] == ["incremental"] * 3
    assert [r.report.frozen for r in outs[1:]] == [len(r.body["messages"]) for r in outs[:-1]]  # the marked last one too
    for a, b in zip(outs, outs[1:]):
        n = len(a.body["messages"]) - 1  # the previously marked message now comes unmarked
        strip = lambda ms: [{**m, "content": [{k: v for k, v in x.items() if k != "cache_control"}  # noqa: E731
                                             for x in m["content"]]} if isinstance(m["content"], list) else m
                            for m in ms]
        assert orjson.dumps(strip(b.body["messages"][:n + 1])) == orjson.dumps(strip(a.body["messages"][:n + 1]))
        assert orjson.dumps(b.body["messages"][:n]) == orjson.dumps(a.body["messages"][:n])


def test_a_mark_on_a_rewritten_message_follows_its_block_past_dropped_thinking():
    from compress.formats.requests.anthropic import remarked, unmarked

    client = {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t", "signature": "s"},
        {"type": "text", "text": "long", "cache_control": {"type": "ephemeral"}},
        {"type": "tool_use", "id": "a", "name": "Bash", "input": {}}]}
    plain = unmarked(client)
    assert "cache_control" not in plain["content"][1] and unmarked(plain) is plain
    rendered = {"role": "assistant", "content": [{"type": "text", "text": "short"}, plain["content"][2]]}
    out = remarked(rendered, client)
    assert out["content"][0] == {"type": "text", "text": "short", "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in out["content"][1]


def test_the_proxy_keys_the_first_and_later_requests_of_a_conversation_alike():
    from ctxmill.proxy.identity import request_key, session_key

    first = cc21.body([cc21.prompt("fix it"), cc21.host_context()])
    first["messages"][0]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    later = cc21.body([cc21.prompt("fix it"), cc21.host_context()] + cc21.tool_turn(1))
    assert session_key("anthropic", first) == session_key("anthropic", later)
    assert request_key("anthropic", orjson.dumps(first)) == request_key("anthropic", orjson.dumps(later))
