"""The coding scenario every client plays against the stand-in, in each client's own tools.

A small Python project whose build fails (`add` subtracts). The scripted model reads the module
(~270 lines), runs the failing build (~130 lines of log), greps for the definition, edits the bug
away, runs the build again and says it is done: six model calls, five of them tool calls that the
client really executes. `expected` maps each tool turn to a text its result must contain, so a test
can check that the client ran the call and sent the result back.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.standin import Call, Turn

PROMPT = "The build fails. Find the bug, fix it and check that the build passes."
FINAL = "Fixed add() in app.py (it subtracted); the build passes now."

APP_HEAD = '''"""Arithmetic helpers for the e2e scenario."""


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
'''

BUILD_SH = '''#!/bin/sh
# A noisy build: progress lines, then the real check.
i=1
while [ $i -le 120 ]; do
  echo "[build] compiling module_$i.py ... ok ($i/120)"
  i=$((i + 1))
done
if python3 -c "import app; assert app.add(2, 3) == 5, 'add(2, 3) returned %r' % app.add(2, 3)"; then
  echo "BUILD OK"
else
  echo "BUILD FAILED: add(2, 3) != 5"
  exit 1
fi
'''

PATCH = ("*** Begin Patch\n*** Update File: app.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
         "*** End Patch\n")


def make_project(root: Path, large: bool = False) -> Path:
    """Write the project into `root` (a git repository with one commit) and return it. `large`:
    a ~1,600-line module and a 600-line build log, big enough for ctxmill to cut."""
    root.mkdir(parents=True, exist_ok=True)
    count = 400 if large else 66
    helpers = "".join(f"\n\ndef helper_{i}(x):\n    return x * {i} + 1\n" for i in range(1, count))
    (root / "app.py").write_text(APP_HEAD + helpers)
    (root / "build.sh").write_text(BUILD_SH.replace("120", "600") if large else BUILD_SH)
    (root / "README.md").write_text("# e2e scenario\n\nRun `sh build.sh`.\n")
    git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-q", "-m", "scenario"], check=True)
    return root


def fixed(root: Path) -> bool:
    text = (root / "app.py").read_text()
    return "return a + b" in text and "return a - b" not in text


@dataclass
class Scenario:
    client: str
    script: list[Turn]
    expected: dict[int, str] = field(default_factory=dict)  # turn whose result is in the next request → text
    prompt: str = PROMPT
    final: str = FINAL


def claude_code(root: Path) -> Scenario:
    app = str(root / "app.py")
    return Scenario("claude-code", [
        Turn("I'll read the module first.", [Call("Read", {"file_path": app})]),
        Turn("", [Call("Bash", {"command": "sh build.sh", "description": "Run the build"})]),
        Turn("", [Call("Grep", {"pattern": "def add", "path": str(root), "output_mode": "content", "-n": True})]),
        Turn("add() subtracts; fixing it.", [Call("Edit", {"file_path": app, "old_string": "return a - b",
                                                            "new_string": "return a + b"})]),
        Turn("", [Call("Bash", {"command": "sh build.sh", "description": "Run the build again"})]),
        Turn(FINAL),
    ], {0: "def add(a, b):", 1: "BUILD FAILED", 2: "def add", 3: "app.py", 4: "BUILD OK"})


def codex(root: Path) -> Scenario:
    return Scenario("codex", [
        Turn("I'll read the module first.", [Call("exec_command", {"cmd": "cat app.py"})]),
        Turn("", [Call("exec_command", {"cmd": "sh build.sh"})]),
        Turn("", [Call("exec_command", {"cmd": "grep -n 'def add' app.py"})]),
        Turn("add() subtracts; fixing it.", [Call("apply_patch", PATCH, custom=True)]),
        Turn("", [Call("exec_command", {"cmd": "sh build.sh"})]),
        Turn(FINAL),
    ], {0: "def add(a, b):", 1: "BUILD FAILED", 2: "def add", 3: "app.py", 4: "BUILD OK"})


def codex_code_mode(root: Path) -> Scenario:
    """Codex on a GPT-6 model (`tool_mode: code_mode_only`): every call is a JavaScript program
    run by the one `exec` tool, calling the real tools on `tools` and printing what it wants seen."""
    def program(js: str) -> Call:
        return Call("exec", js, custom=True)

    return Scenario("codex-code-mode", [
        Turn("I'll read the module first.", [program(
            "const r = await tools.exec_command({cmd: \"sed -n '1,4000p' app.py\"});\ntext(r.output);")]),
        Turn("", [program("text((await tools.exec_command({cmd: 'sh build.sh'})).output);")]),
        Turn("add() subtracts; fixing it.", [program(
            "const patch = `" + PATCH + "`;\nawait tools.apply_patch(patch);\ntext('patched');")]),
        Turn("", [program("const r = await tools.exec_command({cmd: 'sh build.sh'});\ntext(r.output);")]),
        Turn(FINAL),
    ], {0: "def add(a, b):", 1: "BUILD FAILED", 2: "patched", 3: "BUILD OK"})


def opencode(root: Path) -> Scenario:
    app = str(root / "app.py")
    return Scenario("opencode", [
        Turn("I'll read the module first.", [Call("read", {"filePath": app})]),
        Turn("", [Call("bash", {"command": "sh build.sh", "description": "Run the build"})]),
        Turn("", [Call("grep", {"pattern": "def add", "path": str(root)})]),
        Turn("add() subtracts; fixing it.", [Call("edit", {"filePath": app, "oldString": "return a - b",
                                                            "newString": "return a + b"})]),
        Turn("", [Call("bash", {"command": "sh build.sh", "description": "Run the build again"})]),
        Turn(FINAL),
    ], {0: "def add(a, b):", 1: "BUILD FAILED", 2: "def add", 3: "Edit applied", 4: "BUILD OK"})


def opencode_openai(root: Path) -> Scenario:
    """OpenCode with its `openai` provider: Responses API, and apply_patch instead of edit."""
    sc = opencode(root)
    sc.client = "opencode-openai"
    sc.script[3] = Turn("add() subtracts; fixing it.", [Call("apply_patch", {"patchText": PATCH})])
    sc.expected[3] = "app.py"
    return sc


SCENARIOS = {"claude-code": claude_code, "codex": codex, "codex-code-mode": codex_code_mode, "opencode": opencode,
             "opencode-openai": opencode_openai}


def verify(standin, scenario: Scenario, kind: str) -> list[str]:
    """What went wrong in a finished run, judged from what the stand-in received (empty: all good).

    Every model request is protocol-valid; every scripted turn was asked for; each tool result the
    script expects came back in the next request with the expected text.
    """
    from tests.e2e.standin import results_by_turn

    problems = list(standin.problems())
    scripted = [r for r in standin.scripted_calls() if r.kind == kind]
    played = {r.turn for r in scripted}
    missing = sorted(set(range(len(scenario.script))) - played)
    if missing:
        problems.append(f"turns never requested: {missing} (played {sorted(played)})")
    for turn, needle in scenario.expected.items():
        nxt = [r for r in scripted if r.turn == turn + 1]
        if not nxt:
            continue  # reported as a missing turn above
        got = results_by_turn(kind, nxt[0].body).get(turn)
        if got is None:
            problems.append(f"turn {turn}: no tool result in request {nxt[0].n}")
        elif needle not in got:
            problems.append(f"turn {turn}: result lacks {needle!r}: {got[:300]!r}")
    return problems
