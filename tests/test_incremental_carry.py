"""What an incremental run carries from the runs before it changes nothing it decides.

Must hold: a session that keeps its scan checkpoints and parsed messages between runs
(`compress.prefix_scans`, `Session.scans`, `Session.parsed`) gives, request by request, the very
bytes and report of a session that starts every run without them: over new turns, epochs, a
cache that expired, a state reloaded from disk, and a client that rewrote its history. The scans
that resume (the nudge replay, the tool-call index) equal a scan from the start for any prefix
they resume from.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest import mock

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import from_provider
from compress.model import index_tool_calls
from compress.prefix_scans import PrefixScans
from compress.runner.pipeline import run
from compress.stages.nudges import Options, memory_nudges
from compress.state.prefix_hash import PrefixHashMemo, prefix_hashes
from compress.state.session import Session
from compress.tiers import TierThresholds
from compress.vocab.polls import polled_calls

TEXTS = ["Reading the file now.", "We decided to split the module.", "必须先跑测试。", "The root cause was a race.",
         "Fixed it.", "不要这样做。"]
LOG = "\n".join(f"[build] step {i}: compiling src/module_{i}.c ... ok" for i in range(150))


def _turn(n: int, text: str, tool: str, thinking: bool, prompt: str | None) -> list[dict]:
    """An assistant turn (text, maybe thinking, one call) and the user message with its result
    (and a person's prompt after it when `prompt`)."""
    content: list[dict] = [{"type": "thinking", "thinking": f"hmm {n}", "signature": "s"}] if thinking else []
    tool_input = {"command": f"make step{n}"} if tool == "Bash" else {"file_path": f"src/f{n % 3}.py"} \
        if tool == "Read" else {"content": text, "type": "decision"}
    content += [{"type": "text", "text": text}, {"type": "tool_use", "id": f"t{n}", "name": tool, "input": tool_input}]
    output = LOG if tool == "Bash" else "\n".join(f"line {i} of f{n % 3}" for i in range(80)) if tool == "Read" else "ok"
    result: list[dict] = [{"type": "tool_result", "tool_use_id": f"t{n}", "content": output}]
    if prompt is not None:
        result.append({"type": "text", "text": prompt})
    return [{"role": "assistant", "content": content}, {"role": "user", "content": result}]


_step = st.one_of(
    st.tuples(st.just("turn"), st.sampled_from(TEXTS), st.sampled_from(["Bash", "Read", "memory_store"]),
              st.booleans(), st.one_of(st.none(), st.sampled_from(TEXTS))),
    st.tuples(st.just("rewrite"), st.integers(0, 40)),
    st.tuples(st.just("drop"), st.integers(1, 4)),
    st.tuples(st.just("pause"), st.sampled_from([1.0, 30.0, 600.0, 4000.0])),
    st.tuples(st.just("reload")),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_step, min_size=1, max_size=24), st.integers(300, 6000), st.booleans())
def test_property_carried_scans_change_no_byte(steps, high, keep_thinking):
    config = CompressConfig(tiers=TierThresholds(medium=1, high=high), protect_tail_tokens=0, protect_tail_turns=1,
                            epoch_savings_threshold=400, window_epoch_savings=200)
    messages: list[dict] = [{"role": "user", "content": "please fix the build"}]
    stores = CCRStore.in_memory(), CCRStore.in_memory()
    now, n = 1_000.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        places = Path(tmp) / "carried", Path(tmp) / "fresh"
        carried, fresh = Session.load(places[0]), Session.load(places[1])
        for k, step in enumerate(steps):
            if step[0] == "turn":
                n += 1
                messages = messages + _turn(n, step[1], step[2], step[3], step[4])
            elif step[0] == "rewrite" and len(messages) > 1:
                i = step[1] % (len(messages) - 1)
                messages = [*messages[:i], {**messages[i], "content": f"rewritten {k}"}, *messages[i + 1:]]
            elif step[0] == "drop" and len(messages) > step[1]:
                messages = messages[:-step[1]]
            elif step[0] == "pause":
                now += step[1]
            elif step[0] == "reload":  # another process continues the session from its state at rest
                carried, fresh = Session.load(places[0]), Session.load(places[1])
            body = {"model": "claude-sonnet-4-5", "system": "", "messages": orjson.loads(orjson.dumps(messages))}
            if keep_thinking:
                body["context_management"] = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
            fresh.scans, fresh.parsed = {}, {}  # every run of this one starts without what runs carry
            a = run(orjson.loads(orjson.dumps(body)), session=carried, store=stores[0], config=config, now=now)
            b = run(orjson.loads(orjson.dumps(body)), session=fresh, store=stores[1], config=config, now=now)
            assert not a.report.error and not b.report.error
            assert orjson.dumps(a.body) == orjson.dumps(b.body), (k, step)
            assert (a.report.mode, a.report.epoch_reason, a.report.tokens_after, a.report.decisions) == \
                   (b.report.mode, b.report.epoch_reason, b.report.tokens_after, b.report.decisions)
            carried.save()
            fresh.save()
            now += 2.0


TOOLS = {0: "memory_store", 4: "exec_command", 5: "write_stdin"}


def _history(draws: list[tuple[str, int, int]]) -> list:
    """Canonical messages from (text, tool id, what answers) draws: ids repeat, some calls stay
    unanswered, a person writes, or a system message (Claude Code 2.1's hook context) follows;
    tool 0 saves to memory, 4 starts a command that runs on, 5 polls it."""
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for text, tool_id, answer in draws:
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": f"t{tool_id}", "name": TOOLS.get(tool_id, "Read"), "input": {"session_id": 7}}]})
        if answer == 0:
            output = "Process running with session ID 7" if tool_id == 4 else "x"
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{tool_id}",
                                                          "content": output}]})
        elif answer == 1:
            messages.append({"role": "user", "content": text})
        elif answer == 2:
            messages += [{"role": "user", "content": text}, {"role": "system", "content": "hook context"}]
    return list(from_provider({"model": "m", "system": "", "messages": messages}).messages)


_draws = st.lists(st.tuples(st.sampled_from(TEXTS), st.integers(0, 6), st.integers(0, 3)), max_size=25)


@settings(max_examples=200, deadline=None)
@given(_draws, _draws, st.integers(0, 60), st.integers(1, 3), st.integers(1, 6), st.integers(0, 2**16),
       st.sets(st.integers(1, 120), max_size=3), st.integers(0, 3))
def test_property_resumed_scans_equal_scans_from_the_start(draws, other, cut, window, cooldown, seed, flips, behind):
    messages = _history(draws)
    # a client that rewrote the history after message `cut`: the same objects up to it, then others
    shared = min(cut, len(messages))
    branch = messages[:shared] + _history(draws + other)[shared:] if other else []
    grown = [messages[:k] for k in range(1, len(messages) + 1)]
    # the history grows, the client drops its last messages one by one, then it grows another way
    requests = grown + grown[::-1] + [branch[:k] for k in range(shared + 1, len(branch) + 1)]
    opts = Options(window_turns=window, cooldown_turns=cooldown)
    scans = PrefixScans()
    with mock.patch("compress.prefix_scans.PER_KEY", 10**6):  # every checkpoint kept: each is resumed from
        for k, prefix in enumerate(requests, 1):  # one request after another, each leaving checkpoints
            _same_as_from_the_start(prefix, opts, scans, seed + 7919 * sum(f <= k for f in flips), behind)


def _same_as_from_the_start(prefix: list, opts: Options, scans: PrefixScans, seed: int, behind: int) -> None:
    def sent(i: int) -> bool:  # an epoch re-renders earlier messages: what was sent changes (`seed`)
        return (i * 2654435761 + seed) % 3 != 0

    unchanged = max(0, len(prefix) - behind)
    assert memory_nudges(prefix, opts, sent=sent, scans=scans, unchanged=unchanged) == \
        memory_nudges(prefix, opts, sent=sent)
    assert memory_nudges(prefix, opts, scans=scans, unchanged=unchanged) == memory_nudges(prefix, opts)
    assert index_tool_calls(prefix, scans, unchanged) == index_tool_calls(prefix)
    assert list(index_tool_calls(prefix, scans, len(prefix))) == list(index_tool_calls(prefix))
    assert polled_calls(prefix, scans, unchanged) == polled_calls(prefix)


def test_a_checkpoint_is_used_only_for_the_very_objects_it_was_taken_on():
    messages = _history([("We decided to go.", 1, 0), ("Reading the file now.", 2, 1)] * 3)
    scans = PrefixScans()
    index_tool_calls(messages, scans, len(messages))
    assert scans.resume("model.index_tool_calls", messages) is not None
    equal = _history([("We decided to go.", 1, 0), ("Reading the file now.", 2, 1)] * 3)
    assert equal == messages and scans.resume("model.index_tool_calls", equal) is None
    assert scans.resume("model.index_tool_calls", messages[:-1]) is None  # longer than the list


def test_a_replay_resumes_only_where_what_follows_cannot_change_which_request_ended():
    raw = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "We decided to split the module."},
           {"role": "user", "content": "ok"}, {"role": "system", "content": "hook context"}]
    first = raw + [{"role": "assistant", "content": "Reading."}, {"role": "user", "content": "next"}]
    messages = list(from_provider({"model": "m", "system": "", "messages": first}).messages)
    scans = PrefixScans()
    opts = Options(window_turns=2, cooldown_turns=1)
    assert memory_nudges(messages, opts, sent=lambda i: True, scans=scans, unchanged=4) == {2: ("decision",)}
    # the same first four objects, then a person writes again: "ok" no longer ended a request
    rewritten = raw + [{"role": "user", "content": "more"}]
    other = messages[:4] + list(from_provider({"model": "m", "system": "", "messages": rewritten}).messages)[4:]
    assert memory_nudges(other, opts, sent=lambda i: True, scans=scans, unchanged=4) == \
        memory_nudges(other, opts, sent=lambda i: True)


def test_a_live_session_resumes_every_scan_past_what_it_had_seen(monkeypatch):
    config = CompressConfig(tiers=TierThresholds(medium=1, high=10**9), protect_tail_tokens=0, protect_tail_turns=1,
                            epoch_savings_threshold=10**9, window_epoch_savings=10**9)
    messages: list[dict] = [{"role": "user", "content": "please fix the build"}]
    for n in range(1, 8):
        messages += _turn(n, TEXTS[n % len(TEXTS)], "Read", False, None)
    session, store = Session.memory(), CCRStore.in_memory()
    for end in (len(messages) - 4, len(messages) - 2):  # an epoch, then an incremental run
        run({"model": "m", "system": "", "messages": orjson.loads(orjson.dumps(messages[:end]))}, session=session,
            store=store, config=config)
    resumed: dict[object, int] = {}
    real = PrefixScans.resume

    def resume(self, key, listed):
        state = real(self, key, listed)
        at = state if isinstance(state, int) else getattr(state, "at", 0)
        resumed[key if isinstance(key, str) else key[0]] = max(at, resumed.get(key, 0))
        return state

    monkeypatch.setattr(PrefixScans, "resume", resume)
    result = run({"model": "m", "system": "", "messages": orjson.loads(orjson.dumps(messages))}, session=session,
                 store=store, config=config)
    assert result.report.mode == "incremental"
    # each scan reads only what the last two requests added: a stage may have changed the previous
    # request's new messages, so checkpoints stop where that request's known prefix ended
    assert resumed.keys() >= {"model.index_tool_calls", "nudges.memory_nudges", "polls.no_poll_before"}
    assert all(at >= len(messages) - 5 for at in resumed.values()), resumed


_json = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False)
                     | st.sampled_from([1.0, 0.0, -0.0, 2**70]) | st.text(max_size=6) | st.just("\ud800"),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
                     max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_json, max_size=6), min_size=1, max_size=5))
def test_property_memoised_prefix_hashes_are_the_hashes(requests):
    """Whatever the messages (1, 1.0 and true, keys in another order, lone surrogates), a memo
    primed by earlier requests gives the very hashes."""
    memo = PrefixHashMemo()
    for messages in requests:
        for variant in (messages, orjson.loads(orjson.dumps(messages, default=str)) if _plain(messages) else messages,
                        [_reordered(m) for m in messages], [_retyped(m) for m in messages]):
            assert memo.hashes(variant) == prefix_hashes(variant)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(st.integers(0, 7), _json), max_size=7), min_size=1, max_size=6))
def test_property_hashes_trusting_identity_are_the_hashes(plans):
    """A memo that takes a message's hash from the last request when it is the very object at
    the same position (the proxy's worker: its kept messages) gives the very hashes, whatever
    was kept, moved, dropped, copied or new: an integer in a plan is the last request's object
    at that position (kept in place or moved), anything else a new message."""
    memo, last = PrefixHashMemo(trust_identity=True), []
    for plan in plans:
        messages = [last[p] if type(p) is int and 0 <= p < len(last) else p for p in plan]
        assert memo.hashes(messages) == prefix_hashes(messages)
        last = messages


def test_only_a_trusting_memo_takes_a_hash_by_identity():
    """A message changed in place between two requests is hashed anew by a memo that does not
    trust identity (the default: a library caller may reuse and change its objects); one that
    trusts it takes the last hash, which is why only the proxy's worker sets it."""
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    for trusting in (False, True):
        memo = PrefixHashMemo(trust_identity=trusting)
        before = memo.hashes(messages)
        messages[1]["content"] = "changed"
        assert (memo.hashes(messages) == before) is trusting
        assert prefix_hashes(messages) != before
        messages[1]["content"] = "b"


def _plain(value: object) -> bool:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


def _reordered(value: object) -> object:
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


def _retyped(value: object) -> object:
    """The same value to Python's `==` in other JSON: true -> 1 -> 1.0 -> true, 0 -> -0.0."""
    if isinstance(value, dict):
        return {k: _retyped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_retyped(v) for v in value]
    if value is True:
        return 1
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value) if value else -0.0
    if isinstance(value, float) and value == 1.0:
        return True
    return value


@settings(max_examples=150, deadline=None)
@given(_draws, st.integers(0, 60))
def test_property_parsing_leaves_the_index_of_the_named_messages(draws, known):
    """`from_provider` with the session's scans leaves as its checkpoint the index a scan of the
    named messages from the start gives (naming a result moves no block and changes no id), and
    each message's derived flags are their definitions."""
    body = {"model": "m", "system": "", "messages": [m.raw for m in _history(draws)]}
    scans = PrefixScans()
    first = from_provider(body, "anthropic", (), scans).messages
    again = from_provider(body, "anthropic", first[:min(known, len(first))], scans).messages
    for named in (first, again):
        assert scans.resume("model.index_tool_calls", named).calls == index_tool_calls(list(named))
    for m in again:
        thinking = sum(b.kind in ("thinking", "redacted_thinking") for b in m.blocks)
        assert m.thinking_blocks == thinking and m.has_thinking == (m.role == "assistant" and thinking > 0)
        assert m.has_user_text == (m.role == "user" and any(b.kind in ("text", "image") for b in m.blocks))
