"""Nothing secret at rest anywhere under a ctxmill home: every canary of tests/reliability/canaries.py
is planted in every input path, then every byte of every file under the project and the global
home is searched (SQLite databases with their WAL, session state, checkpoints, memory, index,
archives, logs).

Input paths: tool outputs, inputs, user and assistant text compressed by `ctxmill compress`
with a session (CCR and state); `ctxmill memory store` (project and global); the memory tool's `/memories` files; a Claude Code
transcript through the PreCompact / Stop / SessionEnd hooks (checkpoint.md, its CCR entries,
checkpoint.raw.json, notes offered to memory, the history store) and `ctxmill checkpoint`; UserPromptSubmit and
SessionStart hooks; `ctxmill dream`; the proxy's session state and CCR.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson

from tests.chain_checks import anthropic_body
from tests.reliability.canaries import CANARIES, leaked
from tests.reliability.tally import record

REPO = Path(__file__).resolve().parents[2]


def _env(project: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(project / ".ctxmill"),
            "XDG_DATA_HOME": str(project.parent / "xdg"), "HOME": str(project.parent / "user")}


def ctxmill(project: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "ctxmill", *args], input=stdin, capture_output=True, text=True,
                          env=_env(project), cwd=project, timeout=180)
    assert done.returncode == 0, (args, done.stderr)
    return done


def leaky_request() -> dict:
    """Every canary in a long tool output (trimmed into CCR), twice (deduplicated into CCR), in a
    JSON result (crushed), in a tool input, in the person's text and in the assistant's."""
    filler = "\n".join(f"step {i}: compiled module_{i}.py" for i in range(300))
    calls = []
    for c in CANARIES:
        output = f"$ env\n{c.text}\n{filler}\n{c.text}\n"
        calls.append(("Bash", {"command": f"cat .env # {c.text}"}, output))
    calls.append(("Bash", {"command": "aws sts get-session-token"},
                  json.dumps([{"name": c.name, "value": c.text, "n": i} for i, c in enumerate(CANARIES)] * 3)))
    calls += calls[:3]
    body = anthropic_body(calls)
    body["messages"][0]["content"] = "deploy with these: " + " ".join(c.text for c in CANARIES)
    body["messages"][-2]["content"] = "I used " + " and ".join(c.text for c in CANARIES[:10])
    return body


def _entries(canaries: list, limit: int = 1500) -> list[list]:
    """`canaries` in order, packed into groups whose texts fit one memory entry (the limit is
    2,000 characters)."""
    groups: list[list] = [[]]
    for c in canaries:
        if groups[-1] and sum(len(x.text) + 20 for x in groups[-1]) + len(c.text) > limit:
            groups.append([])
        groups[-1].append(c)
    return groups


def claude_transcript(path: Path) -> None:
    lines, parent = [], None
    for i, c in enumerate(CANARIES):
        turn = [
            ("user", {"role": "user", "content": f"We decided to use {c.text} for prod. Next step: rotate {c.text}"}),
            ("assistant", {"id": f"m{i}", "role": "assistant", "content": [
                {"type": "text", "text": f"We must never commit {c.text}; decided to keep it in .env"},
                {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"export X='{c.text}'"}}]}),
            ("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "is_error": True,
                                                  "content": f"Error: bad credential {c.text}\n{c.text}"}]}),
        ]
        for kind, message in turn:
            uuid = f"{kind[0]}{len(lines)}"
            lines.append({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "sess-1", "message": message})
            parent = uuid
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def event(name: str, transcript: Path, project: Path, **fields) -> str:
    return json.dumps({"session_id": "sess-1", "transcript_path": str(transcript), "cwd": str(project),
                       "hook_event_name": name, **fields})


def through_the_proxy(home: Path) -> None:
    from ctxmill.proxy import create_app
    from ctxmill.proxy_config import ProxyConfig
    from tests.fake_upstream import FakeUpstream, ServerThread
    from tests.test_proxy import SMALL

    fake = FakeUpstream()
    with ServerThread(fake.app()) as upstream:
        fake.url = upstream.url
        config = ProxyConfig(upstream_anthropic=upstream.url, upstream_openai=upstream.url, home=home,
                             compress=SMALL, latency_budget_ms=None, workers=1)
        with ServerThread(create_app(config)) as proxy:
            body = leaky_request()
            for end in (5, 9, len(body["messages"])):
                response = httpx.post(proxy.url + "/v1/messages", json={**body, "messages": body["messages"][:end]},
                                      headers={"x-api-key": "sk-ant-api03-" + "k" * 40}, timeout=60)
                assert response.status_code == 200
            deadline = time.monotonic() + 10
            while not list((home / "sessions").glob("proxy-*/state.jsonl")) and time.monotonic() < deadline:
                time.sleep(0.05)
    assert list((home / "sessions").glob("proxy-*/state.jsonl"))


def test_canaries_planted_in_every_input_path_are_nowhere_at_rest(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    home, global_home = project / ".ctxmill", tmp_path / "xdg" / "ctxmill"
    request = tmp_path / "request.json"
    request.write_bytes(orjson.dumps(leaky_request()))
    transcript = tmp_path / "transcript.jsonl"
    claude_transcript(transcript)
    planted = 0

    ctxmill(project, "compress", str(request), "-o", str(tmp_path / "out.json"), "--session", str(home / "sessions" / "cli"))
    assert leaked((tmp_path / "out.json").read_bytes())  # sent on as the client sent it; not at rest
    planted += len(CANARIES)
    for group in _entries(CANARIES):  # a few canaries per entry: 6 processes instead of 80
        ctxmill(project, "memory", "store", "--type", "fact", "\n".join(f"prod credential: {c.text}" for c in group))
        ctxmill(project, "memory", "store", "--type", "note", "--global", "\n".join(f"shared login {c.text}" for c in group))
    planted += 2 * len(CANARIES)
    from memory.config import MemoryConfig
    from memory.files import MemoryFiles

    memory_files = MemoryFiles(MemoryConfig(project_home=home, global_home=global_home, cache_dir=global_home / "cache"))
    with memory_files.change() as f:  # the path of Anthropic's memory tool (ctxmill.anthropic_memory)
        for i, c in enumerate(CANARIES):
            f.write(f"/memories/credentials-{i}.md", f"# credentials\n{c.text}\n")
    planted += len(CANARIES)
    # the first search builds the index; with Chinese entries it loads jieba's dictionary (seconds
    # on a busy machine), which would run the prompt hook past its 2 s budget
    ctxmill(project, "memory", "search", "prod credential")
    for name in ("UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"):
        out = ctxmill(project, "hook", name, stdin=event(name, transcript, project, prompt=CANARIES[3].text,
                                                        trigger="auto", reason="exit"))
        assert leaked(out.stdout) == []
    planted += len(CANARIES)
    ctxmill(project, "checkpoint", str(transcript), "--session-id", "cli-checkpoint")
    started = ctxmill(project, "hook", "SessionStart", stdin=event("SessionStart", transcript, project, source="compact"))
    assert "Checkpoint" in started.stdout and leaked(started.stdout) == []  # nothing secret injected back
    ctxmill(project, "dream")
    through_the_proxy(home)
    planted += len(CANARIES)

    files = [p for root in (home, global_home) for p in root.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"ccr.sqlite3", "state.jsonl", "checkpoint.md", "checkpoint.raw.json", "MEMORY.md",
            "index.bin", "history.sqlite3"} <= names, names  # the hooks kept the transcript in history
    leaks = {str(p.relative_to(tmp_path)): found for p in files if (found := leaked(p.read_bytes()))}
    print(f"\ncanary test: {planted} canaries planted, {len(files)} files searched"
          f" ({sum(p.stat().st_size for p in files):,} bytes), leaked: {len(leaks)}")
    record("secrets", f"canaries planted in every input path, then {len(files)} files at rest searched", planted,
           leaked=sum(len(found) for found in leaks.values()))
    assert leaks == {}
    assert planted == 6 * len(CANARIES) and len(files) >= 12
