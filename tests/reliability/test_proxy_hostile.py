"""Hostile requests through the proxy over real HTTP: whatever a client sends reaches the upstream
(unchanged when the proxy does not understand it), whatever the upstream does comes back as
what happened, credentials go where they belong and never into a log or a file."""

from __future__ import annotations

import json
import logging
import os
import stat

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.proxy_fixtures import fake, proxy, server_log, start_proxy, tracebacks, upstream  # noqa: F401 - fixtures
from tests.proxy_helpers import SECRET, example
from tests.reliability import rawnet
from tests.reliability.tally import record

TIMEOUT = 120  # seconds; a liveness bound on a busy machine, not a speed claim
OAUTH = "sk-ant-oat01-" + "Q" * 40
USER = '{"role":"user","content":"hi"}'


def nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def _body(extra: str = "", messages: str = USER, system: str = '"sys"') -> bytes:
    return f'{{"model":"m","max_tokens":5,"system":{system},"messages":[{messages}]{extra}}}'.encode()


# Bodies the proxy cannot (or must not) understand: each must reach the upstream byte for byte.
NOT_UNDERSTOOD: dict[str, bytes] = {
    "nested 1,001 deep in a field": _body(',"x":' + nested(1001)),
    "nested 5,000 deep in a field": _body(',"x":' + nested(5000)),
    "nested 100,000 deep in a field": _body(',"x":' + nested(100_000)),
    "objects nested 2,000 deep in a message": _body(messages='{"role":"user","content":'
                                                    + '{"a":' * 2000 + '1' + '}' * 2000 + '}'),
    "nested 1,500 deep in the system prompt": _body(system=nested(1500)),
    "integer beyond 64 bits": _body(',"x":123456789012345678901234567890'),
    "negative integer beyond 64 bits": _body(',"x":-98765432109876543210987654321'),
    "integer beyond 64 bits in a message": _body(messages='{"role":"user","content":"hi","n":18446744073709551616}'),
    "10,000-digit number": _body(',"x":' + "7" * 10_000),
    "float beyond double": _body(',"x":1e400'),
    "NaN literal": _body(',"x":NaN'),
    "Infinity literal": _body(',"x":-Infinity'),
    "trailing garbage": _body() + b"}{",
    "UTF-8 BOM": b"\xef\xbb\xbf" + _body(),
    "invalid UTF-8 in a string": _body().replace(b'"hi"', b'"h\xff\xfei"'),
    "lone surrogate escape": _body(messages='{"role":"user","content":"a\\ud800b"}'),
    "NUL byte raw in a string": _body().replace(b'"hi"', b'"h\x00i"'),
    "empty body": b"",
    "whitespace only": b" \n\t ",
    "top-level null": b"null",
    "top-level string": b'"messages"',
    "messages is an object": b'{"model":"m","messages":{"role":"user"}}',
    "messages is null": b'{"model":"m","messages":null}',
    "truncated JSON": _body()[:-7],
    "UTF-16 JSON": _body().decode().encode("utf-16"),
}

# Valid requests with hostile shapes: the proxy may compress them, but must deliver them.
ODD_BUT_VALID: dict[str, bytes] = {
    "messages of every JSON type": b'{"model":"m","messages":[1,"x",null,[],{},true,{"role":"user","content":"q"}]}',
    "roles that are not strings": b'{"model":"m","messages":[{"role":["user"]},{"role":null,"content":"x"},'
                                  b'{"role":"user","content":"q"}]}',
    "blocks without types": b'{"model":"m","messages":[{"role":"user","content":[{"type":null},{},7,"s"]}]}',
    "tool_use input that is not an object": b'{"model":"m","messages":[{"role":"assistant","content":[{"type":'
                                            b'"tool_use","id":"t1","name":"Bash","input":[1,2]}]},{"role":"user",'
                                            b'"content":[{"type":"tool_result","tool_use_id":"t1","content":7}]}]}',
    "metadata user_id that is an object": b'{"model":"m","metadata":{"user_id":{"a":1}},"messages":[' + USER.encode()
                                          + b']}',
    "duplicate keys": b'{"model":"m","messages":[],"messages":[' + USER.encode() + b']}',
    "escaped NUL and controls": _body(messages='{"role":"user","content":"\\u0000\\u001b[31m\\u2028"}'),
    "10 MB single string": _body(messages='{"role":"user","content":"' + "x" * 10_000_000 + '"}'),
    "20,000 tiny messages": _body(messages=",".join([USER] * 20_000)),
}


def _post(url: str, path: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(url + path, content=body, headers={"content-type": "application/json", **headers},
                      timeout=TIMEOUT)


def _leaks(caplog, home) -> int:
    """Places holding SECRET: log records, and files under `home`."""
    places = [r for r in caplog.records if SECRET in r.getMessage()]
    if home is not None:
        places += [p for p in home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    return len(places)


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions", "/v1/responses",
                                  "/v1/messages/count_tokens"])
def test_bodies_the_proxy_does_not_understand_reach_the_upstream_unchanged(fake, start_proxy, tmp_path, caplog, path):
    caplog.set_level(logging.INFO)
    proxy = start_proxy(home=tmp_path / "home")
    lost = []
    for name, body in NOT_UNDERSTOOD.items():
        if path == "/v1/responses":  # the Responses shape's conversation field
            body = body.replace(b'"messages"', b'"input"')
        before = len(fake.received)
        r = _post(proxy.url, path, body, **{"x-api-key": SECRET, "authorization": f"Bearer {SECRET}"})
        arrived = len(fake.received) == before + 1 and fake.received[-1].body == body
        if not arrived or r.content != fake.sent[-1]:
            lost.append((name, r.status_code))
    leaked = _leaks(caplog, tmp_path / "home")
    record("proxy", f"bodies it cannot parse, {path}", len(NOT_UNDERSTOOD), len(lost), leaked)
    assert lost == [] and leaked == 0


def test_valid_but_odd_requests_are_delivered(fake, proxy):
    lost = []
    for name, body in ODD_BUT_VALID.items():
        for path in ("/v1/messages", "/v1/chat/completions"):
            before = len(fake.received)
            r = _post(proxy.url, path, body)
            if r.status_code >= 500 or len(fake.received) != before + 1:
                lost.append((name, path, r.status_code))
            elif fake.received[-1].body != body:  # compressed: still one request with the same messages
                got, sent = orjson.loads(fake.received[-1].body), orjson.loads(body)
                if len(got["messages"]) != len(sent["messages"]):
                    lost.append((name, path, "messages changed"))
    record("proxy", "valid requests of odd shapes", 2 * len(ODD_BUT_VALID), len(lost))
    assert lost == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=st.lists(json_values, max_size=5), noise=st.binary(max_size=40))
def test_any_json_or_bytes_is_delivered(fake, proxy, messages, noise):
    """Generated messages lists (anything JSON can hold, integers past 64 bits included) and
    random bytes: never a 5xx of the proxy's own, always exactly one request upstream."""
    lost = 0
    for body in (json.dumps({"model": "m", "messages": messages}).encode(), noise):
        before = len(fake.received)
        r = _post(proxy.url, "/v1/messages", body)
        lost += r.status_code >= 500 or len(fake.received) != before + 1
    record("proxy", "generated JSON and random bytes (hypothesis)", 2, lost=lost)
    assert lost == 0


@pytest.fixture
def split_upstreams(upstream, start_proxy):
    """A proxy whose two upstreams are told apart by a path prefix on the same fake."""
    return start_proxy(upstream_anthropic=upstream.url + "/anthropic", upstream_openai=upstream.url + "/openai")


ROUTES = [
    ("GET", "/api/oauth/profile", {"authorization": f"Bearer {OAUTH}"}, "anthropic"),
    ("GET", "/api/oauth/profile", {}, "anthropic"),
    ("GET", "/api/claude_cli_feedback", {"authorization": f"Bearer {OAUTH}"}, "anthropic"),
    ("GET", "/v1/models", {"authorization": f"Bearer {OAUTH}"}, "anthropic"),
    ("GET", "/v1/models", {"Authorization": f"bearer  {OAUTH}"}, "anthropic"),
    ("GET", "/v1/models", {"authorization": "Bearer sk-ant-api03-" + "k" * 40}, "anthropic"),
    ("GET", "/v1/models", {"x-api-key": "k"}, "anthropic"),
    ("GET", "/v1/models", {"anthropic-version": "2023-06-01"}, "anthropic"),
    ("GET", "/v1/models/claude-x", {"anthropic-beta": "oauth-2025-04-20", "authorization": f"Bearer {OAUTH}"},
     "anthropic"),
    ("POST", "/v1/messages/batches", {}, "anthropic"),
    ("GET", "/v1/models", {"authorization": "Bearer sk-proj-abc"}, "openai"),
    ("GET", "/v1/models", {}, "openai"),
    ("POST", "/v1/embeddings", {"authorization": "Bearer sk-abc"}, "openai"),
    ("GET", "/v1/files", {"authorization": "Basic sk-ant-not-a-bearer"}, "openai"),
]


def test_anthropic_credentials_and_paths_go_to_anthropic(fake, split_upstreams):
    wrong = []
    for method, path, headers, provider in ROUTES:
        r = httpx.request(method, split_upstreams.url + path, headers=headers, timeout=TIMEOUT)
        if r.json()["path"] != f"/{provider}{path}":
            wrong.append((method, path, r.json()["path"]))
    record("proxy", "routing by path and credentials", len(ROUTES), len(wrong))
    assert wrong == []


def test_proxy_files_are_private(fake, start_proxy, tmp_path):
    home = tmp_path / "home"
    umask = os.umask(0o022)  # the usual umask: private modes must not depend on it
    try:
        proxy = start_proxy(home=home)
        body = example()
        for n in (3, 5):
            request = orjson.dumps({**body, "messages": body["messages"][:n]})
            assert _post(proxy.url, "/v1/messages", request).is_success
        proxy.__exit__(None, None, None)  # flushes state and stats
    finally:
        os.umask(umask)
    paths = [home, *home.rglob("*")]
    assert any(p.name == "state.lock" for p in paths) and any(p.parent.name == "sessions" for p in paths)
    loose = [(str(p.relative_to(tmp_path)), oct(stat.S_IMODE(p.stat().st_mode))) for p in paths
             if stat.S_IMODE(p.stat().st_mode) != (0o700 if p.is_dir() else 0o600)]
    assert loose == []


@pytest.mark.parametrize(("behaviour", "status", "says"), [
    (rawnet.close_at_once, 502, "closed the connection without a complete answer"),
])
def test_an_upstream_that_took_the_request_is_not_called_unreachable(start_proxy, behaviour, status, says):
    with rawnet.RawUpstream(behaviour) as up:
        proxy = start_proxy(upstream_anthropic=up.url, upstream_openai=up.url)
        r = _post(proxy.url, "/v1/messages", _body())
        assert len(up.received) >= 1  # it did get the request
    told = r.status_code == status and says in r.json()["error"]["message"]
    record("proxy", "an upstream that misbehaves (hangs up, stalls, cuts its answer off)", 1, lost=not told)
    assert told and "unreachable" not in r.json()["error"]["message"]


def test_an_upstream_that_answers_nothing_in_time_gets_504(start_proxy):
    def stall(conn):
        conn.settimeout(5)
        try:
            conn.recv(1)  # holds the connection until the proxy gives up
        except OSError:
            pass

    with rawnet.RawUpstream(stall) as up:
        proxy = start_proxy(upstream_anthropic=up.url, upstream_openai=up.url, read_timeout=0.5)
        r = _post(proxy.url, "/v1/chat/completions", _body())
    told = r.status_code == 504 and "sent no answer within 0.5 s" in r.json()["error"]["message"]
    record("proxy", "an upstream that misbehaves (hangs up, stalls, cuts its answer off)", 1, lost=not told)
    assert told


@pytest.mark.parametrize("behaviour", [rawnet.cut_length_body, rawnet.cut_event_stream])
def test_a_truncated_upstream_answer_reaches_the_client_truncated(start_proxy, server_log, behaviour):
    """The client sees a broken answer (as it would without the proxy), never a complete-looking
    short one; the proxy logs one line and keeps serving."""
    with rawnet.RawUpstream(behaviour) as up:
        proxy = start_proxy(upstream_anthropic=up.url, upstream_openai=up.url)
        for _ in range(3):
            with pytest.raises(httpx.RemoteProtocolError):
                _post(proxy.url, "/v1/messages", _body())
        assert len(up.received) == 3
    record("proxy", "an upstream that misbehaves (hangs up, stalls, cuts its answer off)", 3)
    assert sum("broke off" in r.getMessage() for r in server_log.records) == 3
    assert tracebacks(server_log) == []
