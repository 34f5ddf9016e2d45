"""The proxy beside web pages and other local users: the red team's 205 cross-origin `text/plain`
POSTs were all answered and created 205 session folders, the next SessionStart pruned a real
session's checkpoint, and `ctxmill run --attach` sent the API key to another user's server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.state.session import prune_sessions
from ctxmill.proxy.sessions import HOUR, SessionPool
from memory.summary import CHECKPOINT_FILE
from tests.helpers import eventually
from tests.proxy_fixtures import fake, start_proxy, upstream  # noqa: F401 - fixtures
from tests.proxy_helpers import example
from tests.trust.kit import OTHER_UID, attach_to_a_server_run_by, can_be_another_user

TIMEOUT = 30
PAGE = {"origin": "https://evil.example", "content-type": "text/plain;charset=UTF-8"}
NODE_FETCH = {"content-type": "application/json", "sec-fetch-mode": "cors", "accept-language": "*",
              "user-agent": "node"}  # what node's fetch sends


def _conversation(i: int) -> bytes:
    body = example()
    body["messages"][0]["content"] = f"conversation {i}: " + str(body["messages"][0]["content"])
    return orjson.dumps(body)


@pytest.mark.parametrize("headers", [
    PAGE,
    {"content-type": "text/plain"},  # a page's simple request, Origin stripped by a proxy in between
    {"content-type": "application/x-www-form-urlencoded"},
    {"content-type": "application/json", "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors"},
    {"content-type": "application/json", "origin": "http://127.0.0.1:8787", "sec-fetch-site": "same-origin"},
], ids=["cross-origin-text", "text-plain", "form", "sec-fetch-cross-site", "dns-rebinding"])
def test_requests_a_web_page_can_send_are_refused_and_create_nothing(fake, start_proxy, tmp_path, headers):
    proxy = start_proxy(home=tmp_path / "home")
    for i in range(20):
        r = httpx.post(proxy.url + "/v1/messages", headers=headers, content=_conversation(i), timeout=TIMEOUT)
        assert r.status_code in (403, 415) and "refused" in r.json()["error"]["message"]
    assert fake.received == []
    assert not (tmp_path / "home" / "sessions").exists() or list((tmp_path / "home" / "sessions").iterdir()) == []
    if "origin" in headers or "sec-fetch-site" in headers:
        assert httpx.get(proxy.url + "/ctxmill/stats", headers=headers, timeout=TIMEOUT).status_code == 403


def test_agents_requests_go_through(fake, start_proxy, tmp_path):
    """SDKs and node's fetch (which sends Sec-Fetch-Mode: cors, and no Origin) are served."""
    proxy = start_proxy(home=tmp_path / "home")
    for headers in (NODE_FETCH, {"content-type": "application/json"}, {}):
        r = httpx.post(proxy.url + "/v1/messages", headers=headers, content=_conversation(0), timeout=TIMEOUT)
        assert r.status_code == 200
    assert len(fake.received) == 3
    assert httpx.get(proxy.url + "/ctxmill/stats", timeout=TIMEOUT).status_code == 200


def test_new_session_folders_are_capped_per_hour(tmp_path, caplog):
    now = [0.0]
    pool = SessionPool(tmp_path, max_sessions=64, max_stats=64, new_folders_per_hour=3, clock=lambda: now[0])
    dirs = [pool._entry(f"{i:032x}").directory for i in range(5)]
    assert sum(d is not None for d in dirs) == 3 and dirs[3] is None and dirs[4] is None
    assert sum("kept in memory only" in r.getMessage() for r in caplog.records) == 1  # one line, not one per session
    now[0] = HOUR
    assert pool._entry(f"{9:032x}").directory is not None  # a new hour, a new allowance


def test_a_flood_of_conversations_creates_at_most_the_cap_of_folders(fake, start_proxy, tmp_path):
    proxy = start_proxy(home=tmp_path / "home", new_sessions_per_hour=2)
    for i in range(6):
        r = httpx.post(proxy.url + "/v1/messages", headers=NODE_FETCH, content=_conversation(i), timeout=TIMEOUT)
        assert r.status_code == 200
    sessions = tmp_path / "home" / "sessions"
    eventually(lambda: sessions.is_dir() and len(list(sessions.iterdir())) == 2)
    time.sleep(0.5)  # the saves of the other four would have landed by now
    assert len(list(sessions.iterdir())) == 2


def _old(folder: Path, age: float) -> None:
    for path in (folder, *folder.iterdir()):
        os.utime(path, (time.time() - age, time.time() - age))


def test_pruning_never_deletes_a_session_that_has_a_checkpoint(tmp_path):
    real = tmp_path / "real-session"
    real.mkdir()
    (real / CHECKPOINT_FILE).write_text("# the person's checkpoint\n")
    _old(real, 3600)
    for i in range(205):  # what anonymous requests created afterwards
        (tmp_path / f"proxy-{i:032x}").mkdir()
        (tmp_path / f"proxy-{i:032x}" / "state.jsonl").write_text("{}\n")
    removed = prune_sessions(tmp_path, keep=(CHECKPOINT_FILE,))
    assert len(removed) == 5 and (real / CHECKPOINT_FILE).exists()  # 200 others kept; checkpoints do not count
    _old(real, 90 * 86400)
    prune_sessions(tmp_path, keep=(CHECKPOINT_FILE,))
    assert (real / CHECKPOINT_FILE).exists()  # nor for its age


def test_session_start_keeps_checkpoints(tmp_path, monkeypatch):
    from ctxmill.hooks import after_session_start

    home = tmp_path / ".ctxmill"
    real = home / "sessions" / "real-session"
    real.mkdir(parents=True)
    (real / CHECKPOINT_FILE).write_text("# the person's checkpoint\n")
    _old(real, 3600)
    for i in range(201):
        (home / "sessions" / f"proxy-{i:032x}").mkdir()
    monkeypatch.setenv("CTXMILL_HOME", str(home))
    after_session_start({"cwd": str(tmp_path)})
    assert (real / CHECKPOINT_FILE).exists() and len(list((home / "sessions").iterdir())) == 200 + 1


def test_attach_uses_a_proxy_this_user_started(tmp_path):
    done = attach_to_a_server_run_by(None, tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(not can_be_another_user(), reason="a second user needs root")
def test_attach_never_uses_another_users_server(tmp_path):
    done = attach_to_a_server_run_by(OTHER_UID, tmp_path)
    assert done.returncode == 2 and "uid 65534" in done.stderr and "not attaching" in done.stderr


@pytest.mark.parametrize("body", [b"not json", b"{}", b'{"messages": "x"}', b'{"messages": []}', b'{"model": "m"}',
                                  b'{"model": "m", "messages": [{"role": "user"}]}', b"[]", b"null"])
def test_a_body_that_is_no_api_request_creates_no_session_folder(fake, start_proxy, tmp_path, body):
    proxy = start_proxy(home=tmp_path / "home")
    r = httpx.post(proxy.url + "/v1/messages", headers={"content-type": "application/json"}, content=body,
                   timeout=TIMEOUT)
    assert fake.received[-1].body == body and r.status_code in (200, 400)  # forwarded as it came (400: the fake's)
    time.sleep(0.3)
    sessions = tmp_path / "home" / "sessions"
    assert not sessions.exists() or list(sessions.iterdir()) == []


_token = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)
_agent_headers = st.dictionaries(_token.map(str.lower).filter(lambda k: k not in ("origin", "sec-fetch-site",
                                                                                   "sec-fetch-mode", "content-type")),
                                 _token, max_size=6)


@settings(max_examples=200, deadline=None)
@given(headers=_agent_headers, origin=_token, site=st.sampled_from(["cross-site", "same-site", "same-origin", "x"]))
def test_any_request_with_a_pages_headers_is_refused_and_an_agents_never(headers, origin, site):
    from ctxmill.proxy.browsers import refusal, simple_body

    agent = {**headers, "content-type": "application/json", "sec-fetch-mode": "cors"}
    assert refusal(agent) is None and simple_body(agent) is None
    assert refusal({**agent, "origin": origin}) is not None
    assert refusal({**agent, "sec-fetch-site": site}) is not None
    for kind in ("text/plain", "Application/X-WWW-Form-Urlencoded; charset=x", "multipart/form-data; boundary=b"):
        assert simple_body({**agent, "content-type": kind}) is not None
