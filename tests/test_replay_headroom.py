"""headroom-ai as a replay peer, run in its own venv: what it gets and gives back keeps every
tool call paired with its result, each provider's conversation field is the one it sees, and it
counts with tiktoken's real vocabulary offline. Skips when headroom-ai is not installed
(`CTXMILL_HEADROOM_PYTHON`, else /tmp/peer-headroom/bin/python; see ../shared/peers/)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from compress.formats.requests import from_provider
from compress.model import TOOL_RESULT, TOOL_USE
from replay.headroom_peer import WORKER, Headroom, available

PEER = Path(os.environ.get("CTXMILL_HEADROOM_PYTHON", "/tmp/peer-headroom/bin/python"))
pytestmark = pytest.mark.skipif(not (PEER.exists() and available(PEER)), reason="headroom-ai is not installed")

ROWS = json.dumps([{"id": i, "name": f"user-{i}", "status": "active" if i % 7 else "disabled",
                    "email": f"user{i}@example.com", "score": i * 3 % 101} for i in range(400)], indent=1)


def _pairs(body: dict) -> tuple[list[tuple[str, str]], list[str]]:
    """The tool calls (id, name) and the results' call ids of a request, in order."""
    blocks = [b for m in from_provider(body).messages for b in m.blocks]
    return ([(b.tool_id, b.tool_name) for b in blocks if b.kind == TOOL_USE],
            [b.tool_id for b in blocks if b.kind == TOOL_RESULT])


def _anthropic() -> dict:
    messages: list[dict] = [{"role": "user", "content": "list the users and fix the disabled ones"}]
    for i, (name, output) in enumerate([("Bash", ROWS), ("Read", "def f():\n    return 1\n"), ("Bash", "3 users disabled")]):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": name,
                                                        "input": {"command": "users --json"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}",
                                                   "content": output}]}]
    return {"model": "claude-sonnet-4-5", "messages": [*messages, {"role": "user", "content": "go on"}]}


def _responses() -> dict:
    return {"model": "gpt-5", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the users"}]},
        {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"command": ["users"]}'},
        {"type": "function_call_output", "call_id": "call_1", "output": ROWS}]}


@pytest.fixture(scope="module")
def headroom():
    peer = Headroom(PEER)
    yield peer
    peer.close()


def test_headroom_cuts_a_long_json_output_and_keeps_every_tool_call_paired(headroom):
    body = _anthropic()
    out = headroom(body)
    assert len(json.dumps(out)) < len(json.dumps(body)) - len(ROWS) / 2
    assert _pairs(out) == _pairs(body) and out["model"] == body["model"]


def test_one_headroom_peer_serves_bodies_of_every_provider(headroom):
    """A Responses body's `input` is what headroom gets; its library leaves such items as
    they are, and the next Anthropic body is still compressed by the same worker."""
    body = _responses()
    out = headroom(body)
    assert set(out) == set(body) and _pairs(out) == _pairs(body) == ([("call_1", "shell")], ["call_1"])
    assert len(json.dumps(headroom(_anthropic()))) < len(json.dumps(_anthropic()))


def test_headroom_counts_with_tiktoken_offline():
    """The worker's set-up gives headroom tiktoken's o200k vocabulary without the network (a
    missing vocabulary makes headroom estimate from characters and decide differently)."""
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import headroom_worker; headroom_worker._setup_env(); "
             "from headroom.providers.openai import OpenAIProvider; "
             "print(type(OpenAIProvider().get_token_counter('gpt-4o')).__name__)")
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    done = subprocess.run([str(PEER), "-c", probe, str(WORKER.parent)], capture_output=True, text=True,
                          timeout=120, env={**env, "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "OpenAITokenCounter"
