"""Hostile input and hostile surroundings for `ctxmill hook EVENT`: every hook fails open (exit 0,
nothing on stdout, at most one line on stderr, within its budget), whatever it is fed and
wherever it runs; the PreToolUse guard refuses every placeholder the pipeline writes."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxmill.commands.hook import BUDGETS, GRACE
from ctxmill.hooks import EVENTS, pre_tool_use
from tests.chain_checks import OPEN_CONFIG, anthropic_body
from tests.helpers import compress, strings
from tests.reliability.tally import record

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPT_EVENTS = ("PreCompact", "SessionEnd", "Stop")
TIMEOUT = 120  # seconds; a liveness bound on a busy machine, not a speed claim
BUDGET_SCALE = 10
"""These tests are about failing open, not speed: each hook gets 10x its budget (`BUDGETS`), so a
loaded machine cannot turn a slow answer into a second stderr line. The budget itself is tested
by `test_a_handler_stuck_outside_python_is_stopped_past_its_budget`."""
HOOK = [sys.executable, "-c", "import sys; from ctxmill.commands import hook; "
        f"hook.BUDGETS.update({{e: b * {BUDGET_SCALE} for e, b in hook.BUDGETS.items()}}); "
        "from ctxmill.cli import console; console()", "hook"]
"""`ctxmill hook EVENT` (append the event) with the scaled budgets."""


def hook(event: str, stdin: bytes | str, home: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home.parent / "user"),
                "XDG_DATA_HOME": str(home.parent / "xdg"), "CTXMILL_HOME": str(home), **env}
    return subprocess.run([*HOOK, event], input=data, capture_output=True, env=full_env, cwd=cwd, timeout=TIMEOUT)


def failed_open_quietly(done: subprocess.CompletedProcess, may_answer: bool = False) -> bool:
    """Exit 0, at most one line on stderr and no traceback; no answer, or (`may_answer`) a
    well-formed one (SessionStart injects its hint even when the project home is unusable)."""
    err = done.stderr.decode(errors="replace")
    quiet = done.returncode == 0 and len(err.splitlines()) <= 1 and "Traceback" not in err
    if not done.stdout:
        return quiet
    return quiet and may_answer and "hookSpecificOutput" in json.loads(done.stdout)


def event(name: str, **fields) -> str:
    return json.dumps({"session_id": "s-1", "transcript_path": "/nowhere/t.jsonl", "cwd": "/nowhere",
                       "hook_event_name": name, "prompt": "why is the parser slow", "tool_name": "Write",
                       "tool_input": {"file_path": "/x", "content": "x"}, **fields})


UNREADABLE: dict[str, bytes | str] = {
    "empty": "",
    "not JSON": "hello {",
    "a JSON array": "[1, 2]",
    "a JSON string": '"SessionStart"',
    "invalid UTF-8": b'{"prompt": "\xff\xfe"}',
    "binary garbage": bytes(range(256)) * 40,
    "nested 100,000 deep": '{"prompt":' + "[" * 100_000 + "]" * 100_000 + "}",
    "16 MB of spaces then JSON": " " * (16 * 2**20) + "{}",
}
"""Input no handler gets to see: every event fails at the same place, reading it."""
ODD: dict[str, bytes | str] = {
    "every field of the wrong type": json.dumps({"session_id": 7, "transcript_path": ["/x"], "cwd": 3,
                                                 "prompt": {"a": 1}, "tool_name": [], "tool_input": "text",
                                                 "source": None, "trigger": 5}),
    "paths that are not paths": event("x", transcript_path="\x00/etc/passwd", cwd="\x00"),
    "a 2 MB prompt": event("x", prompt="retry timeout budget " * 100_000),
    "huge numbers": '{"prompt": 1e400, "session_id": 123456789012345678901234567890}',
}
"""Input every handler reads in its own way."""
BAD_PAYLOADS = {**{name: (data, ("UserPromptSubmit", "PreCompact")) for name, data in UNREADABLE.items()},
                **{name: (data, EVENTS) for name, data in ODD.items()}}


@pytest.mark.parametrize("name", list(BAD_PAYLOADS))
def test_bad_hook_input_fails_open(tmp_path, name):
    home = tmp_path / ".ctxmill"
    data, events = BAD_PAYLOADS[name]
    loud = [(e, hook(e, data, home, tmp_path)) for e in events]
    loud = [(e, d.returncode, d.stdout[:200], d.stderr[:300]) for e, d in loud
            if not failed_open_quietly(d, may_answer=e == "SessionStart")]
    record("hooks", "bad hook input", len(events), lost=len(loud))
    assert loud == []


@pytest.fixture
def read_only_home(tmp_path):
    """A project home on a tmpfs mounted read-only (skips where mounting is not allowed)."""
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
    try:
        (mount / ".ctxmill").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True, capture_output=True)
        yield mount / ".ctxmill"
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    lines = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s-1",
              "message": {"role": "user", "content": "Fix the parser."}},
             {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s-1",
              "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Done."}]}}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def _homes(tmp_path: Path, read_only: Path | None) -> dict[str, tuple[Path, dict]]:
    a_file = tmp_path / "home-is-a-file"
    a_file.write_text("not a folder")
    under_file = a_file / ".ctxmill"
    bad_config = tmp_path / "bad-config" / ".ctxmill"
    bad_config.mkdir(parents=True)
    (bad_config / "config.toml").write_text("[proxy\nworkers = ")
    config_dir = tmp_path / "config-is-a-folder" / ".ctxmill"
    (config_dir / "config.toml").mkdir(parents=True)
    garbage = tmp_path / "garbage-memory" / ".ctxmill"
    (garbage / "sessions" / "current.json").mkdir(parents=True)
    (garbage / "MEMORY.md").write_bytes(b"\xff\x00# Memory\n- [x] <!-- m-zz" * 1000)
    homes = {"home is a file": (a_file, {}), "home below a file": (under_file, {}),
             "unparsable config.toml": (bad_config, {}), "config.toml is a folder": (config_dir, {}),
             "garbage memory and state": (garbage, {}),
             "no CTXMILL_HOME, cwd gone": (tmp_path / "unused", {"CTXMILL_HOME": ""})}
    if read_only is not None:
        homes["read-only disk"] = (read_only, {})
    return homes


@pytest.mark.parametrize("ro", [False, True], ids=["writable-disk", "read-only-disk"])
def test_an_unusable_home_fails_open(tmp_path, request, ro):
    read_only = request.getfixturevalue("read_only_home") if ro else None
    transcript = _transcript(tmp_path)
    gone = tmp_path / "gone"
    gone.mkdir()
    tried, loud = 0, []
    for label, (home, env) in _homes(tmp_path, read_only).items():
        if ro != (label == "read-only disk"):
            continue
        cwd = gone if "cwd gone" in label else tmp_path
        for name in EVENTS:
            payload = event(name, transcript_path=str(transcript), cwd=str(cwd))
            if "cwd gone" in label:
                gone.mkdir(exist_ok=True)
                done = _in_deleted_cwd(name, payload, home, gone, env)
            else:
                done = hook(name, payload, home, cwd, **env)
            tried += 1
            if not failed_open_quietly(done, may_answer=name == "SessionStart"):
                loud.append((label, name, done.returncode, done.stderr[-300:]))
    record("hooks", "unusable project homes" + (" (read-only disk)" if ro else ""), tried, lost=len(loud))
    assert loud == []


def _in_deleted_cwd(name: str, stdin: str, home: Path, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """The hook started in `cwd`, which is removed before the hook runs (a shell in a deleted folder)."""
    script = ("import json, os, shutil, subprocess, sys; os.chdir(sys.argv[1]); shutil.rmtree(sys.argv[1]); "
              "done = subprocess.run([*json.loads(sys.argv[3]), sys.argv[2]], "
              "input=sys.stdin.buffer.read(), capture_output=True); "
              "sys.stdout.buffer.write(done.stdout); sys.stderr.buffer.write(done.stderr); "
              "sys.exit(done.returncode)")
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXMILL_HOME": str(home),
                "XDG_DATA_HOME": str(home.parent / "x"), **env}
    return subprocess.run([sys.executable, "-c", script, str(cwd), name, json.dumps(HOOK)], input=stdin.encode(),
                          capture_output=True, env=full_env, timeout=TIMEOUT)


def _special_transcripts(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    to_zero = tmp_path / "zero.jsonl"
    to_zero.symlink_to("/dev/zero")
    sparse = tmp_path / "sparse.jsonl"
    with open(sparse, "wb") as out:
        out.truncate(2 * 2**30)  # 2 GB of holes: past the read limit, costs no disk
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 4000)
    one_line = tmp_path / "one-line.jsonl"
    one_line.write_text('{"type":"user","message":{"role":"user","content":"' + "x" * 5_000_000 + '"}}')
    return {"named pipe, no writer": fifo, "/dev/zero": Path("/dev/zero"), "/dev/urandom": Path("/dev/urandom"),
            "symlink to /dev/zero": to_zero, "a folder": tmp_path, "missing": tmp_path / "missing.jsonl",
            "2 GB sparse file": sparse, "binary garbage": binary, "one 5 MB line": one_line}


REFUSED = ("named pipe, no writer", "/dev/zero", "/dev/urandom", "symlink to /dev/zero", "a folder", "2 GB sparse file")


def test_transcripts_that_are_not_regular_files_are_refused_unread(tmp_path):
    """Every odd transcript through PreCompact; the endless ones through SessionEnd and Stop too
    (the three read the transcript through the same checkpoint call)."""
    home = tmp_path / ".ctxmill"
    tried, loud = 0, []
    for label, path in _special_transcripts(tmp_path).items():
        events = TRANSCRIPT_EVENTS if label in ("named pipe, no writer", "/dev/zero") else ("PreCompact",)
        for name in events:
            done = hook(name, event(name, transcript_path=str(path), cwd=str(tmp_path)), home, tmp_path)
            tried += 1
            err = done.stderr.decode(errors="replace")
            refused = label not in REFUSED or "regular file" in err or "larger than" in err
            if not (failed_open_quietly(done) and refused):
                loud.append((label, name, done.returncode, err[-300:]))
    record("hooks", "transcripts that are pipes, devices, huge or garbage", tried, lost=len(loud))
    assert loud == []


def test_a_handler_stuck_outside_python_is_stopped_past_its_budget(tmp_path):
    """SIGALRM cannot interrupt C code that never returns to Python; the supervising process
    kills it GRACE seconds past the budget, exit 0 and one line."""
    script = ("import sys, argparse; from ctxmill import hooks; from ctxmill.commands import hook; "
              "hook.BUDGETS['Stop'] = 0.5; hooks.handle = lambda name, event: sum(range(10**15)); "
              "sys.exit(hook.run(argparse.Namespace(event='Stop')))")
    done = subprocess.run([sys.executable, "-c", script], input=b"{}", capture_output=True, timeout=TIMEOUT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "CTXMILL_HOME": str(tmp_path / ".ctxmill")})
    assert failed_open_quietly(done) and b"past its budget" in done.stderr
    # so every hook ends before Claude Code's own 60 s hook timeout (SessionStart has two phases)
    assert max(b * (2 if e == "SessionStart" else 1) for e, b in BUDGETS.items()) + GRACE < 60


def _pipeline_placeholders() -> list[str]:
    """Every line holding a ctxmill placeholder in what the pipeline made of reads, listings,
    long lines, base64 blobs and repeated calls."""
    source = "\n".join(f"{i}\tdef function_{i}(x):  # compute {'v' * (i % 7)}" for i in range(1, 3000))
    listing = "\n".join(f"/repo/pkg{i % 9}/module_{i}.py" for i in range(2000))
    long_line = "x = " + "1234567890" * 3000
    blob = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 400).decode()
    calls = [("Read", {"file_path": "/repo/app.py"}, source), ("Bash", {"command": "find /repo"}, listing),
             ("Bash", {"command": "python -m pytest -q"}, source),  # a long command output: lines omitted
             ("Bash", {"command": "cat wide.py"}, long_line + "\n" + source[:2000]),
             ("Bash", {"command": "cat image.b64"}, "saved file\n" + blob),
             ("Read", {"file_path": "/repo/app.py"}, source)]
    result = compress(anthropic_body(calls), config=OPEN_CONFIG)
    return [line for text in strings(result.body) for line in text.split("\n") if "ctxmill: " in line]


def test_the_guard_refuses_every_placeholder_the_pipeline_writes():
    lines = _pipeline_placeholders()
    assert any("lines omitted" in line for line in lines) and any("chars cut]" in line for line in lines)
    let_through = []
    for line in lines:
        for tool, tool_input in (("Write", {"file_path": "/repo/app.py", "content": f"x = 1\n{line}\n"}),
                                 ("Edit", {"file_path": "/repo/app.py", "old_string": "a", "new_string": line}),
                                 ("MultiEdit", {"edits": [{"old_string": "a", "new_string": "b"},
                                                          {"old_string": "c", "new_string": line}]}),
                                 ("Bash", {"command": f"cat > app.py <<'EOF'\n{line}\nEOF"})):
            decision = pre_tool_use({"tool_name": tool, "tool_input": tool_input})
            if not decision or decision["hookSpecificOutput"]["permissionDecision"] != "deny":
                let_through.append((tool, line[:120]))
    record("hooks", "pipeline placeholders offered to the PreToolUse guard", 4 * len(lines), lost=len(let_through))
    assert let_through == []


def test_the_guard_lets_ordinary_text_through():
    texts = ["Markers look like [ctxmill: …] and name a deep_expand key.", '[ctxmill: … · deep_expand("KEY")]',
             "x = [1, 2]  # ctxmill: nothing omitted here", "see [ctxmill: 45 lines] later", "print('[ctxmill: ]')",
             "a = b[ctxmill]", "45 lines omitted", "[ctxmill: 3 more in src/]"]
    wrongly_denied = [t for t in texts if pre_tool_use({"tool_name": "Write", "tool_input": {"content": t}})]
    assert wrongly_denied == []


def test_the_guard_end_to_end_denies_a_keyless_notice(tmp_path):
    done = hook("PreToolUse", event("PreToolUse", tool_input={"file_path": "/x.py",
                                                              "content": "a\n[ctxmill: 45 lines omitted]\nb"}),
                tmp_path / ".ctxmill", tmp_path)
    decision = json.loads(done.stdout)["hookSpecificOutput"]
    assert done.returncode == 0 and decision["permissionDecision"] == "deny"
    assert "[ctxmill: 45 lines omitted]" in decision["permissionDecisionReason"]
