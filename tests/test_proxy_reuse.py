"""A worker parses and serialises only what a session's request appended (ctxmill.proxy.reuse),
and gets exactly what the whole parse and the whole serialisation give: the same values (key
order and number types included) and the same bytes, request after request."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxmill.proxy import reuse
from ground.jsonbytes import dumps


def same(a: Any, b: Any) -> bool:
    """Equal as parsed JSON is, strictly: types, key order, -0.0 apart from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return repr(a) == repr(b) if isinstance(a, float) else a == b


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), TEXT,
                    st.floats(allow_nan=False, allow_infinity=False))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)
MESSAGE = st.builds(lambda role, content, extra: {"role": role, "content": content, **extra},
                    st.sampled_from(["user", "assistant", "system"]), st.one_of(TEXT, st.lists(VALUES, max_size=2)),
                    st.dictionaries(st.sampled_from(["cache_control", "name", "messages"]), VALUES, max_size=1))
STEP = st.tuples(st.sampled_from(["grow", "grow", "grow", "mark", "rewind", "edit first", "edit last", "stream",
                                  "spaces", "decoy", "duplicate", "not a list", "broken", "surrogate"]),
                 st.lists(MESSAGE, min_size=1, max_size=3))


def _body(field: str, messages: list, step: str, n: int) -> bytes:
    """One request's bytes as a client of this step would send them."""
    head: dict[str, Any] = {"model": "m", "stream": n % 2 == 0}
    if step == "decoy":  # a nested list under the same name, before the conversation
        head["tools"] = [{"input_schema": {field: messages[:2]}}]
    body = {**head, field: messages, "metadata": {"user_id": "u"}}
    if step == "spaces":  # a client that writes JSON with spaces (Python's json module)
        return json.dumps(body).encode()
    if step == "duplicate":  # the field twice: the parser keeps one of them, both paths the same one
        return orjson.dumps(body)[:-1] + b"," + orjson.dumps(field) + b":[]}"
    if step == "not a list":
        return orjson.dumps({**body, field: {"0": messages}})
    if step == "broken":
        return orjson.dumps(body)[:-2]
    if step == "surrogate":  # a lone surrogate, escaped: orjson refuses it, both paths alike
        return orjson.dumps(body)[:-1] + b',"x":"\\ud800"}'
    return orjson.dumps(body)


def _parsed(raw: bytes) -> tuple[str, Any]:
    try:
        return "ok", orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return "error", type(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(["messages", "input"]), first=st.lists(MESSAGE, min_size=1, max_size=4),
       steps=st.lists(STEP, min_size=1, max_size=10))
def test_parse_gives_what_the_whole_parse_gives_request_after_request(field, first, steps):
    """Growing, re-marked, rewound, edited, re-formatted, decoyed and broken requests: `parse`
    with what it kept from the request before equals `orjson.loads` of the whole request, or
    raises as it does."""
    messages, last = list(first), None
    for n, (step, new) in enumerate(steps):
        if step == "grow":
            messages = messages + new
        elif step == "mark" and messages:  # Claude Code moves its cache breakpoint to the newest message
            messages = [*messages[:-1], {**messages[-1], "cache_control": {"type": "ephemeral"}}, *new]
        elif step == "rewind":
            messages = messages[:max(1, len(messages) - len(new))]
        elif step == "edit first":
            messages = [new[0], *messages[1:]]
        elif step == "edit last":
            messages = [*messages[:-1], new[0]]
        raw = _body(field, messages, step, n)
        expected = _parsed(raw)
        try:
            body, kept = reuse.parse(raw, last)
        except orjson.JSONDecodeError as exc:
            assert expected == ("error", type(exc))
            last = None
            continue
        assert expected[0] == "ok" and same(body, expected[1])
        if kept is not None and (ends := kept.spans.ends):  # what it keeps is what it claims
            assert kept.spans.items is body[kept.field]
            assert bytes(kept.spans.prefix(len(ends))) == b",".join(orjson.dumps(e) for e in body[kept.field][:len(ends)])
        last = kept


def test_a_growing_conversation_is_parsed_from_what_it_appended():
    """The common case does take the short path: the kept messages are the very objects."""
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}]
    raw = orjson.dumps({"model": "m", "messages": messages, "system": "s"})
    body, kept = reuse.parse(raw, None)
    assert kept is not None and len(kept.spans.ends) == 2
    more = orjson.dumps({"model": "m", "messages": [*messages, {"role": "user", "content": "next"}], "system": "s"})
    again, kept2 = reuse.parse(more, kept)
    assert same(again, orjson.loads(more))
    assert again["messages"][0] is body["messages"][0] and again["messages"][1] is body["messages"][1]
    assert kept2 is not None and len(kept2.spans.ends) == 3


def test_a_client_that_writes_json_otherwise_keeps_nothing_and_gets_the_whole_parse():
    for raw in (json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
                b'{"model":"m","messages":[{"content":"hi", "role":"user"}]}'):
        body, kept = reuse.parse(raw, None)
        assert kept is None and same(body, orjson.loads(raw))  # its bytes are not orjson's: nothing to reuse


def test_a_body_holding_the_placeholder_text_cannot_pass_for_the_reused_span():
    """The placeholder's nonce is drawn per process; even a body that names it (it cannot know
    it) gets the whole parse's values."""
    messages = [{"role": "user", "content": "hi"}, {"role": "user", "content": "there"}]
    body, kept = reuse.parse(orjson.dumps({"messages": messages}), None)
    forged = orjson.dumps({"x": {"messages": [reuse.PLACEHOLDER]}, "messages": [reuse.PLACEHOLDER, *messages]})
    assert same(reuse.parse(forged, kept)[0], orjson.loads(forged))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(["messages", "input"]), first=st.lists(MESSAGE, min_size=1, max_size=4),
       steps=st.lists(st.tuples(st.sampled_from(["keep", "keep", "replace", "rewind", "head", "surrogate"]),
                                st.lists(MESSAGE, max_size=3)), min_size=1, max_size=8))
def test_serialise_gives_the_whole_serialisation_whatever_it_kept(field, first, steps):
    """Rendered bodies that keep some of the last one's messages (the same objects), replace
    others, drop the newest or change the other fields: `serialise` is `dumps`, byte for byte,
    including where orjson refuses a value and the stdlib writes it."""
    rendered, last, head = list(first), None, {"model": "m"}
    for step, new in steps:
        if step == "keep":
            rendered = rendered + new
        elif step == "replace" and rendered:
            rendered = [*rendered[:len(rendered) // 2], *new]
        elif step == "rewind":
            rendered = rendered[:max(0, len(rendered) - 1)]
        elif step == "head":
            head = {"model": "m", "max_tokens": len(rendered)}
        body = {**head, field: rendered, "tail": 1}
        if step == "surrogate":
            body = {**body, "x": "\ud800"}
        data, last = reuse.serialise(body, last)
        assert data == dumps(body)


def test_the_kept_output_is_reused_for_the_same_objects_only():
    one, two = {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}
    data, kept = reuse.serialise({"messages": [one, two]}, None)
    assert kept is not None and kept.spans.ends
    copy = {"role": "user", "content": "a"}  # equal, not the same object: serialised again
    for body in ({"messages": [one, two, {"role": "user", "content": "c"}]}, {"messages": [copy, two]}):
        assert reuse.serialise(body, kept)[0] == dumps(body)


OPS = st.lists(st.sampled_from(["grow", "grow", "grow", "mark", "rewind", "edit", "stream", "spaces",
                                "restart", "reload"]), min_size=2, max_size=9)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_a_session_gets_the_same_bytes_as_with_whole_parses_and_serialisations(ops, tmp_path_factory):
    """Random sessions through in-process workers on disk state (growing, cache breakpoints moving
    to the newest message, rewound, edited early, re-formatted, a worker restarted, a state
    reloaded from disk): every run's bytes sent upstream and figures equal a worker's that parses
    and serialises each request whole."""
    from compress.config import CompressConfig
    from ctxmill.proxy.worker import Worker, WorkerSetup
    from tests.proxy_helpers import example
    from tests.proxy_stages import CHAIN

    def setup(name: str) -> WorkerSetup:
        root = tmp_path_factory.mktemp(name)
        return WorkerSetup(root / "sessions", root / "ccr", CompressConfig(), CHAIN, max_sessions=8)

    reusing, whole = setup("reusing"), setup("whole")
    workers = {"reusing": Worker(reusing), "whole": Worker(whole)}
    body = example()
    messages, n, edits, key = body["messages"], 3, 0, "b" * 32
    for turn, op in enumerate(ops):
        if op == "grow":
            n = min(len(messages), n + 2)
        elif op == "rewind":
            n = max(2, n - 3)
        elif op == "edit":
            edits += 1
            messages = [{**messages[0], "content": f"{messages[0]['content']} (edited {edits})"}, *messages[1:]]
        sent = messages[:n]
        if op == "mark":
            last = sent[-1]
            content = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
            sent = [*sent[:-1], {**last, "content": [*content[:-1], {**content[-1], "cache_control": {"type": "ephemeral"}}]}]
        request = {**body, "stream": turn % 2 == 0 if op == "stream" else False, "messages": sent}
        raw = json.dumps(request).encode() if op == "spaces" else orjson.dumps(request)
        if op == "restart":
            workers = {"reusing": Worker(reusing), "whole": Worker(whole)}
        out = {}
        for name, worker in workers.items():
            state = worker.state(key)
            if op == "reload":
                state._session = None  # the next run loads the state from disk
            if name == "whole":
                state._last_request = state._last_output = None
            summary = worker.compress(key, raw)
            worker.finish()
            out[name] = (summary.data or raw, summary.tokens_before, summary.tokens_after, summary.mode, summary.tier,
                         summary.error, summary.stages)
        assert out["reusing"] == out["whole"], (turn, op)
        assert not out["reusing"][5]


def test_a_worker_parses_and_serialises_a_growing_session_from_what_it_appended(tmp_path):
    """The short paths are the ones a growing session takes (the kept messages and renderings
    are the last run's objects), and their bytes are the whole path's."""
    from compress.config import CompressConfig
    from ctxmill.proxy.worker import Worker, WorkerSetup
    from tests.proxy_helpers import example
    from tests.proxy_stages import CHAIN

    worker = Worker(WorkerSetup(tmp_path / "s", tmp_path / "c", CompressConfig(), CHAIN, max_sessions=8))
    body = example()
    key, state = "c" * 32, worker.state("c" * 32)
    for n in (10, 12):
        summary = worker.compress(key, orjson.dumps({**body, "messages": body["messages"][:n]}))
        worker.finish()
        assert summary.data is not None and not summary.error
        if n == 10:
            request, output = state._last_request, state._last_output
    assert request is not None and output is not None and len(request.spans.ends) == 10
    assert state._last_request is not None and state._last_request.spans.items[:10] == request.spans.items
    assert all(a is b for a, b in zip(state._last_request.spans.items, request.spans.items))
    assert state._last_output is not None and state._last_output.spans.items[0] is output.spans.items[0]
    assert summary.data == dumps(orjson.loads(summary.data))
