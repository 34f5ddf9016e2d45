"""The OpenCode side: live messages <-> an Anthropic body and part edits, the engine's sessions and
checkpoints, and the engine server on its private socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.opencode_live import edits, first_prompt, to_body
from compress.runner.pipeline import run
from compress.state.session import Session
from compress.tiers import TierThresholds

REPO = Path(__file__).resolve().parents[1]
BIG = "\n".join(f"[build] compiling module_{i}.py ... ok ({i}/900)" for i in range(900)) + "\nBUILD FAILED"


def step(n: int, output: str = BIG, reasoning: str = "", text: str = "", status: str = "completed") -> dict:
    parts = [{"type": "step-start"}]
    if reasoning:
        parts.append({"type": "reasoning", "text": reasoning})
    if text:
        parts.append({"type": "text", "text": text, "synthetic": False, "ignored": False})
    tool = {"type": "tool", "callID": f"call_{n}", "tool": "bash", "status": status, "input": {"command": "sh build.sh"}}
    tool["error" if status == "error" else "output"] = output
    return {"id": f"msg_a{n}", "role": "assistant", "parts": parts + [tool, {"type": "step-finish"}]}


def prompt(text: str, n: int = 0) -> dict:
    return {"id": f"msg_u{n}", "role": "user", "parts": [{"type": "text", "text": text, "synthetic": False, "ignored": False}]}


def apply(messages: list[dict], ops: list[dict]) -> list[dict]:
    """What the plugin does with the edits (ctxmill.js `apply`), on the projection."""
    out = json.loads(json.dumps(messages))
    for op in ops:
        part = out[op["m"]]["parts"][op["p"]] if "p" in op else None
        if op["op"] == "text":
            part["text"] = op["text"]
        elif op["op"] in ("output", "error", "input"):
            part[op["op"]] = op["value"]
    for op in sorted((o for o in ops if o["op"] == "drop"), key=lambda o: (-o["m"], -o["p"])):
        del out[op["m"]]["parts"][op["p"]]
    for op in sorted((o for o in ops if o["op"] == "note"), key=lambda o: -o["m"]):
        out.insert(op["m"] + 1, {"id": "note", "role": "user", "parts": [{"type": "text", "text": op["text"]}]})
    return out


def test_the_body_has_the_wire_structure_and_unchanged_gives_no_edits():
    messages = [prompt("fix the build"), step(1, reasoning="look at the log"), step(2, status="error", output="boom")]
    body, origins = to_body(messages, "claude-sonnet-4-5")
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert body["messages"][4]["content"][0] == {"type": "tool_result", "tool_use_id": "call_2", "content": "boom",
                                                 "is_error": True}
    assert edits(origins, body, json.loads(json.dumps(body))) == []
    assert first_prompt(messages) == "fix the build"
    assert first_prompt([{"id": "c", "role": "user", "parts": [{"type": "compaction"}]}] + messages[1:]) == ""


def test_old_outputs_are_cut_old_reasoning_dropped_and_a_nudge_becomes_a_note():
    config = CompressConfig(tiers=TierThresholds(medium=1, high=10**9), protect_tail_tokens=0, protect_tail_turns=1)
    messages = [prompt("fix the build"), step(1, reasoning="the log will tell"), step(2),
                prompt("We decided to keep SQLite instead of Postgres.", 1)]
    body, origins = to_body(messages)
    out = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=config).body
    ops = edits(origins, body, out)
    kinds = {(o["op"], o["m"]) for o in ops}
    # step 2 is in the protected tail: only decide_on_arrival cuts its output
    assert kinds == {("output", 1), ("output", 2), ("drop", 1), ("note", 3)}
    new = apply(messages, ops)
    assert "deep_expand(" in new[1]["parts"][-2]["output"] and len(new[1]["parts"][-2]["output"]) < len(BIG) / 3
    assert all(p["type"] != "reasoning" for p in new[1]["parts"])
    assert [o for o in ops if o["op"] == "note"] == [{"op": "note", "m": 3, "text": out["messages"][-1]["content"][-1]["text"]}]
    assert "memory_store" in new[4]["parts"][0]["text"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["ok", "big", "error", "prompt", "think"]), min_size=1, max_size=10))
def test_edits_keep_every_call_and_its_one_result(kinds):
    messages = [prompt("go")]
    for n, kind in enumerate(kinds):
        if kind == "prompt":
            messages.append(prompt(f"next {n}", n + 1))
        else:
            messages.append(step(n, output=BIG if kind == "big" else "fine", reasoning="hm" if kind == "think" else "",
                                 status="error" if kind == "error" else "completed"))
    config = CompressConfig(tiers=TierThresholds(medium=1, high=2), protect_tail_tokens=0, protect_tail_turns=1)
    body, origins = to_body(messages)
    out = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=config)
    assert not out.report.errors
    new = apply(messages, edits(origins, body, out.body))
    calls = lambda ms: [p["callID"] for m in ms for p in m["parts"] if p["type"] == "tool"]  # noqa: E731
    assert calls(new) == calls(messages)
    assert [m for m in new if m["id"] != "note"].__len__() == len(messages)


def test_the_engine_keeps_each_session_and_its_first_prompt_across_compaction(tmp_path, monkeypatch):
    from ctxmill.engine.opencode import OpenCodeEngine

    monkeypatch.delenv("CTXMILL_HOME", raising=False)
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    engine = OpenCodeEngine()
    key = "sk-ant-api03-" + "x" * 90
    secret = [prompt(f"Please fix the failing build in app.py (the key is {key})")] + [step(n) for n in range(5)]
    engine.transform({"directory": str(project), "sessionID": "ses_secret", "messages": secret})
    kept = (project / ".ctxmill/sessions/opencode-ses_secret/prompt.txt").read_text()
    assert key not in kept and "[REDACTED" in kept
    messages = [prompt("Please fix the failing build in app.py")] + [step(n) for n in range(5)]
    first = engine.transform({"directory": str(project), "sessionID": "ses_1", "messages": messages})
    assert first["edits"] and "epoch" in first["summary"]
    again = engine.transform({"directory": str(project), "sessionID": "ses_1", "messages": messages + [step(9)]})
    assert "incremental" in again["summary"]
    state = project / ".ctxmill/sessions/opencode-ses_1"
    assert (state / "state.jsonl").exists() and (state / "prompt.txt").read_text() == "Please fix the failing build in app.py"
    compacted = [{"id": "c", "role": "user", "parts": [{"type": "compaction"}]},
                 {"id": "s", "role": "assistant", "parts": [{"type": "text", "text": "We ran the build."}]},
                 prompt("Continue if you have next steps", 2), step(10)]
    engine.transform({"directory": str(project), "sessionID": "ses_1", "messages": compacted})
    answer = engine.compacting({"directory": str(project), "sessionID": "ses_1"})
    assert any("Please fix the failing build in app.py" in c for c in answer["context"])
    checkpoint = (project / ".ctxmill/checkpoint.md").read_text()
    assert "Please fix the failing build in app.py" in checkpoint.split("## Task")[1].split("##")[0]
    assert engine.transform({"directory": str(project), "messages": messages})["edits"] == []  # no session id
    engine.close()


def test_the_engine_server_answers_on_its_socket_one_at_a_time_and_stops_when_idle(tmp_path):
    sock = tmp_path / "run" / "engine.sock"
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / "home")}
    cmd = [sys.executable, "-m", "ctxmill", "engine", "--socket", str(sock), "--idle-minutes", "0.03"]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert oct(sock.parent.stat().st_mode & 0o777) == "0o700"
        second = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
        assert second.returncode == 0 and first.poll() is None  # the second saw the first answer and left
        assert first.wait(timeout=60) == 0  # idle: stops by itself
        assert not sock.exists()
    finally:
        first.kill()


def test_compaction_keeps_the_session_in_history_without_its_secret(tmp_path, monkeypatch):
    from ctxmill.engine.opencode import OpenCodeEngine
    from ctxmill.settings import Settings
    from memory.history.query import search
    from memory.history.store import HistoryStore

    monkeypatch.delenv("CTXMILL_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    key = "sk-ant-api03-" + "y" * 90
    messages = [prompt(f"The release bucket is gs://zebra-releases; deploy key {key}")] + [step(n) for n in range(3)]
    engine = OpenCodeEngine()
    engine.transform({"directory": str(project), "sessionID": "ses_h", "messages": messages})
    engine.compacting({"directory": str(project), "sessionID": "ses_h"})
    engine.close()
    settings = Settings.load(project / ".ctxmill")
    with HistoryStore.open(settings.history) as store:
        hits = search(store, "zebra releases bucket").hits
        assert hits and hits[0].session == "ses_h" and hits[0].project == str(project)
        assert [s.key for s in store.sessions()] == ["ses_h"]
    assert key.encode() not in b"".join(p.read_bytes() for p in settings.history.path.parent.iterdir())
