"""The proxy's session keys from what a request adds to its session's last one
(`ctxmill.proxy.identity_memo`): always `request_identity`'s answer, whatever came before."""

from __future__ import annotations

import copy
import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmill.proxy.identity import request_identity, session_key
from ctxmill.proxy.identity_memo import IdentityMemo
from tests import cc21
from tests.strategies import anthropic_requests, openai_requests, responses_requests, texts, wild_texts

FIELD = {"anthropic": "messages", "openai": "messages", "openai-responses": "input"}
OPS = ("grow", "grow", "grow", "mark", "same", "field", "first", "edit", "order", "fork")
FORMATS = ("compact",) * 10 + ("spaced", "ascii", "garbage", "truncate", "duplicate")


def _serialise(body: dict, fmt: str, at: int, field: str) -> bytes:
    try:
        compact = orjson.dumps(body)
    except TypeError:  # a lone surrogate: only Python's json writes it (as invalid UTF-8)
        compact = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    if fmt == "spaced":
        return json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if fmt == "ascii":
        return json.dumps(body, separators=(",", ":")).encode()
    at %= len(compact) + 1
    if fmt == "garbage":
        return compact[:at] + b"\x01,]" + compact[at:]
    if fmt == "truncate":
        return compact[:at]
    if fmt == "duplicate":  # a second conversation list after the first
        return compact[:-1] + b',"' + field.encode() + b'":[]}'
    return compact


def _marked(message: dict) -> dict:
    """`message` with a cache breakpoint on its last block moved on or off (Claude Code's)."""
    out = copy.deepcopy(message)
    content = out.get("content")
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        if content[-1].pop("cache_control", None) is None:
            content[-1]["cache_control"] = {"type": "ephemeral"}
    return out


@st.composite
def histories(draw, base=None):
    """(provider, [(body, format, position, hint)]): one conversation's requests as a client
    sends them (growing, breakpoints moving, resent), with what may differ between requests
    (a field, the first user message, an old message, key order, a fork) and bodies that are
    not compact, not JSON or not one conversation list."""
    provider, body = base or draw(st.one_of(
        st.tuples(st.just("anthropic"), anthropic_requests(wild=True)),
        st.tuples(st.just("anthropic"), anthropic_requests(texts=wild_texts, wild=True)),
        st.tuples(st.just("openai"), openai_requests()),
        st.tuples(st.just("openai-responses"), responses_requests(wild=True))))
    field = FIELD[provider]
    messages = list(body[field])
    shown = draw(st.integers(1, len(messages)))
    current = dict(body, **{field: messages[:shown]})
    steps = []
    hint = draw(st.sampled_from(["", "s-1"]))
    for _ in range(draw(st.integers(1, 12))):
        op = draw(st.sampled_from(OPS))
        listed = list(current[field])
        if op == "grow":
            more = draw(st.integers(1, 3))
            extra = messages[len(listed):len(listed) + more]
            listed += extra or [{"role": "user", "content": draw(texts) or "more"}]
        elif op == "mark" and listed:
            listed[-1] = _marked(listed[-1])
        elif op == "field":
            name = draw(st.sampled_from(["system", "metadata", "user", "prompt_cache_key", "model", "stream",
                                         "instructions", "zz_after", "previous_response_id"]))
            value = draw(texts)
            current = {**current, name: {"user_id": value} if name == "metadata" else value}
        elif op == "first":
            first = next((i for i, m in enumerate(listed) if isinstance(m, dict) and m.get("role") == "user"), None)
            if first is not None:
                listed[first] = {**listed[first], "content": draw(texts) or "other"}
        elif op == "edit" and len(listed) > 1:
            at = draw(st.integers(0, len(listed) - 1))
            listed[at] = {"role": "user", "content": draw(texts)}
        elif op == "order":
            current = {field: listed, **{k: v for k, v in current.items() if k != field}} \
                if draw(st.booleans()) else {**{k: v for k, v in current.items() if k != field}, field: listed}
        elif op == "fork" and len(listed) > 2:
            listed = listed[:draw(st.integers(1, len(listed) - 1))]
        current = {**current, field: listed}
        steps.append((copy.deepcopy(current), draw(st.sampled_from(FORMATS)), draw(st.integers(0, 10**6)),
                      hint if draw(st.integers(0, 9)) else "s-2"))
    return provider, steps


@settings(max_examples=300, deadline=None)
@given(histories(), histories(), st.lists(st.booleans(), max_size=20))
def test_the_memo_answers_what_the_whole_parse_answers(first, second, schedule):
    """Two conversations' requests interleaved through one memo: every answer is the whole
    parse's, for compact, spaced, escaped, broken and truncated bodies alike."""
    memo = IdentityMemo()
    queues = [list(first[1]), list(second[1])]
    providers = [first[0], second[0]]
    turns = [*schedule, *([False] * len(queues[0])), *([True] * len(queues[1]))]
    for turn in turns:
        if not queues[turn]:
            continue
        body, fmt, at, hint = queues[turn].pop(0)
        raw = _serialise(body, fmt, at, FIELD[providers[turn]])
        assert memo.identify(providers[turn], raw, hint) == request_identity(providers[turn], raw)


def _claude_code_session(prompt: str, turns: int) -> list[bytes]:
    """A Claude Code 2.1 conversation's requests: each marks its last message's last block."""
    messages = [cc21.prompt(prompt), cc21.host_context()]
    out = [orjson.dumps(cc21.body(messages))]
    for n in range(1, turns):
        messages += cc21.tool_turn(n)
        out.append(orjson.dumps(cc21.body(messages)))
    return out


def test_a_continuing_session_is_identified_from_its_remembered_prefix():
    """A Claude Code session (breakpoint moving onto each new last message) and a bench-style
    one (fields before the list, `stream` alternating): from the third request on, each is
    identified from what the last one proved, with the whole parse's answer (the first one's
    identity read all its messages, so it proves nothing for the next)."""
    memo = IdentityMemo()
    requests = _claude_code_session("fix the build", 12)
    for raw in requests:
        assert memo.identify("anthropic", raw, "s-1") == request_identity("anthropic", raw)
    assert memo.hits == len(requests) - 2
    messages = [{"role": "user", "content": "make the tests pass"}]
    hits = memo.hits
    for turn in range(10):
        messages += [{"role": "assistant", "content": [{"type": "text", "text": f"step {turn}"}]},
                     {"role": "user", "content": [{"type": "text", "text": "result " * 50}]}]
        raw = orjson.dumps({"model": "m", "stream": bool(turn % 2), "system": "sys", "metadata": {"user_id": "u"},
                            "messages": messages})
        assert memo.identify("anthropic", raw) == request_identity("anthropic", raw)
    assert memo.hits - hits >= 7  # the first two requests (one per `stream` value) take the whole path


def test_a_session_key_never_goes_to_another_conversation():
    """Two sessions with the same system prompt, client id and tools but different first
    prompts, interleaved: each keeps its own key; a body that starts like one of them but
    breaks after the remembered bytes is no request, as for the whole parse."""
    memo = IdentityMemo()
    ours, theirs = _claude_code_session("fix the build", 6), _claude_code_session("write the docs", 6)
    for a, b in zip(ours, theirs):
        mine, other = memo.identify("anthropic", a, "s-1"), memo.identify("anthropic", b, "s-1")
        assert mine == request_identity("anthropic", a) and other == request_identity("anthropic", b)
        assert mine.key != other.key
    assert memo.hits >= 8
    grown = orjson.loads(ours[-1])
    grown["messages"] += cc21.tool_turn(99)
    raw = orjson.dumps(grown)
    broken = raw[:-40] + b"\x00" + raw[-40:]
    assert memo.identify("anthropic", broken, "s-1") == request_identity("anthropic", broken) == (None, None)
    changed = {**grown, "metadata": {"user_id": "someone else"}}
    assert memo.identify("anthropic", orjson.dumps(changed), "s-1").key == session_key("anthropic", changed) \
        != session_key("anthropic", grown)
