"""The engine server on hostile bodies: too large -> 413, nested past what it parses -> 400, each
with one line and no traceback; the engine itself never sees them. Deep but parseable bodies
are answered 200 (fail open: no edits, so the plugin sends the conversation unchanged)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time

import pytest
from starlette.testclient import TestClient

from ctxmill.engine.server import Idle, create_app
from tests.test_opencode_engine import REPO, prompt, step


class Recording:
    def __init__(self) -> None:
        self.calls: list[dict] = []

    def transform(self, request: dict) -> dict:
        self.calls.append(request)
        return {"edits": []}

    compacting = transform

    def close(self) -> None:
        pass


@pytest.fixture(params=[4096])
def engine_client(caplog, request):
    """A client of an engine server whose body cap is the fixture's param (bytes)."""
    caplog.set_level(logging.DEBUG)
    engine = Recording()
    with TestClient(create_app(engine, Idle(), max_body=request.param), raise_server_exceptions=False) as client:
        yield client, engine


def _no_traceback(caplog) -> None:
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize("path", ["/opencode/transform", "/opencode/compacting"])
def test_a_body_over_the_cap_is_413_in_one_line(engine_client, caplog, path):
    client, engine = engine_client
    body = b'{"sessionID": "s", "messages": ["' + b"x" * 5000 + b'"]}'
    r = client.post(path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json() == {"error": "body exceeds 4,096 bytes"}
    chunked = client.post(path, content=iter([body[:3000], body[3000:]]))  # no declared length
    assert chunked.status_code == 413
    assert engine.calls == []
    _no_traceback(caplog)


@pytest.mark.parametrize("engine_client", [10**6], indirect=True)
@pytest.mark.parametrize("body, error", [
    (b"[" * 3000 + b"]" * 3000, "body is nested too deeply"),
    (b'{"a": ' + b'{"b": ' * 1500 + b"1" + b"}" * 1501, "body is nested too deeply"),
    (b"{not json", "body is not JSON"),
    (b"[1, 2]", "body is not a JSON object"),
])
def test_unreadable_bodies_are_400_in_one_line(engine_client, caplog, body, error):
    client, engine = engine_client
    r = client.post("/opencode/transform", content=body)
    assert r.status_code == 400 and r.json() == {"error": error}
    assert engine.calls == []
    _no_traceback(caplog)


def test_a_deep_tool_input_the_parser_reads_is_answered_200(tmp_path, monkeypatch, caplog):
    """A real engine on a conversation whose tool input is nested 1,000 levels: 200 and no
    traceback; whatever the pipeline makes of it, the answer is JSON the plugin can read."""
    from ctxmill.engine.opencode import OpenCodeEngine

    monkeypatch.setenv("CTXMILL_HOME", str(tmp_path / "home"))
    tool_step = step(1)
    tool_step["parts"][1]["input"] = {"command": "DEEP"}
    payload = {"directory": str(tmp_path), "sessionID": "ses_deep", "messages": [prompt("go"), tool_step, step(2)]}
    deep = b'{"k": ' * 1000 + b'"leaf"' + b"}" * 1000  # built as bytes: Python's own encoder stops earlier
    body = json.dumps(payload).encode().replace(b'"DEEP"', deep)

    with TestClient(create_app(OpenCodeEngine(), Idle()), raise_server_exceptions=False) as client:
        r = client.post("/opencode/transform", content=body)
    assert r.status_code == 200 and isinstance(r.json()["edits"], list)
    _no_traceback(caplog)


PLUGIN = REPO / "ctxmill" / "opencode_plugin" / "ctxmill.js"
DRIVER = """
import { readFileSync } from "node:fs"
import { CtxmillPlugin } from %s
const hooks = await CtxmillPlugin({ directory: process.argv[2] })
const messages = JSON.parse(readFileSync(process.argv[3], "utf8"))
const before = JSON.stringify(messages)
await hooks["experimental.chat.messages.transform"]({}, { messages })
console.log(JSON.stringify({ unchanged: JSON.stringify(messages) === before }))
"""


class Editing(Recording):
    """Answers every transform with an edit of the first text part, so a plugin that applied an
    answer would change the conversation."""

    def transform(self, request: dict) -> dict:
        self.calls.append(request)
        return {"edits": [{"op": "text", "m": 0, "p": 0, "text": "EDITED"}]}


def _conversation(tool_output: str) -> list[dict]:
    info = {"sessionID": "ses_1", "time": {"created": 1}}
    return [{"info": {**info, "id": "msg_u", "role": "user"},
             "parts": [{"id": "p1", "type": "text", "text": "fix the build"}]},
            {"info": {**info, "id": "msg_a", "role": "assistant", "model": {"modelID": "claude-x"}},
             "parts": [{"id": "p2", "type": "tool", "callID": "c1", "tool": "bash",
                        "state": {"status": "completed", "input": {"command": "make"}, "output": tool_output}}]}]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_plugin_sends_the_conversation_unchanged_when_the_engine_refuses_it(tmp_path):
    import threading

    import uvicorn

    sock = tmp_path / "engine.sock"
    engine = Editing()
    server = uvicorn.Server(uvicorn.Config(create_app(engine, Idle(), max_body=4096), uds=str(sock),
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER % json.dumps(PLUGIN.as_uri()))
    env = {**os.environ, "CTXMILL_ENGINE_SOCKET": str(sock), "CTXMILL_BIN": "false",
           "CTXMILL_PLUGIN_LOG": str(tmp_path / "plugin.log")}
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        results = {}
        for name, output in (("small", "ok"), ("too large", "x" * 10_000)):
            conversation = tmp_path / f"{name}.json"
            conversation.write_text(json.dumps(_conversation(output)))
            done = subprocess.run(["node", str(driver), str(tmp_path), str(conversation)], env=env,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            results[name] = json.loads(done.stdout)["unchanged"]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert results == {"small": False, "too large": True}  # an answer is applied; a refusal changes nothing
    assert len(engine.calls) == 1
    assert '"skipped":"no answer"' in (tmp_path / "plugin.log").read_text()
