"""README.md's commands run as written, and every relative link in README.md and docs/ resolves.

Which README lines run (decided here, explicitly):
- Every line of a fenced code block whose command is `ctxmill …` runs, in README order, in one
  scratch project (a git repository holding a copy of `fixtures/`) with a scratch HOME, and must
  exit 0. `ctxmill` is this installation's script. The clients are stand-ins on PATH (`claude`,
  `codex`, `opencode` print their arguments and exit 0), so no real client is needed.
- `ctxmill proxy &` starts a proxy in the background; it and every other `ctxmill proxy` line get
  `--port P` (a free port), so a proxy already on 8787 elsewhere on the machine does not matter.
  It is stopped at the end.
- The first set-up command: its install part is what made this environment and is not run; its
  `.venv/bin/ctxmill compress …` part runs, and what it prints must be the summary README shows
  (all but the time at its end). The second set-up command must be the command `.ci/run` runs.
- Other lines (`python3 -m venv …`, `ANTHROPIC_BASE_URL=… my-agent`) are not run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CTXMILL = Path(sys.executable).parent / "ctxmill"
INSTALL = "python3 -m venv .venv && .venv/bin/pip install -q -e . && "
FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)


def code_lines(text: str) -> list[str]:
    """The lines of every fenced code block, in order, stripped."""
    return [line.strip() for block in FENCE.findall(text) for line in block.splitlines() if line.strip()]


def setup_commands(text: str) -> tuple[str, str]:
    """The two set-up commands: the first code block's two non-comment lines."""
    block = FENCE.search(text.split("## Try it", 1)[1]).group(1)
    first, second = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    return first, second


def ctxmill_commands(text: str) -> list[list[str]]:
    """Every code line whose command is `ctxmill`, as argv (comments dropped)."""
    return [shlex.split(line, comments=True) for line in code_lines(text) if line.startswith("ctxmill ")]


def printed_summary(text: str) -> str:
    """The summary line README says the first command prints."""
    return next(line for line in code_lines(text) if line.startswith("ctxmill: "))


def without_time(summary: str) -> str:
    return re.sub(r" · [0-9.]+ ms$", "", summary.strip())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scratch(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    project, home, stubs = tmp_path / "project", tmp_path / "home", tmp_path / "bin"
    for folder in (home, stubs):
        folder.mkdir()
    shutil.copytree(ROOT / "fixtures", project / "fixtures")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    for client in ("claude", "codex", "opencode"):
        (stubs / client).write_text('#!/bin/sh\necho "$0 $*"\n')
        (stubs / client).chmod(0o755)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("CTXMILL_", "XDG_", "ANTHROPIC_", "OPENAI_"))}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(tmp_path / "run"),
               PATH=os.pathsep.join([str(stubs), str(CTXMILL.parent), env.get("PATH", "")]))
    (tmp_path / "run").mkdir(mode=0o700)
    return project, env


def wait_for_proxy(port: int, proxy: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proxy.poll() is None, f"ctxmill proxy exited with {proxy.returncode}"
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/ctxmill/stats", timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("ctxmill proxy did not answer within 30 s")


def test_readme_is_short():
    assert len(README.read_text().splitlines()) <= 250


def test_second_setup_command_is_what_ci_runs():
    ci_command = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                  if line.strip() and not line.startswith("#")][-1]
    assert setup_commands(README.read_text())[1] == ci_command


def test_every_readme_command_runs_as_written(tmp_path):
    text = README.read_text()
    project, env = scratch(tmp_path)
    first, _ = setup_commands(text)
    assert first.startswith(INSTALL), first
    compress = shlex.split(first[len(INSTALL):])
    assert compress[0] == ".venv/bin/ctxmill"
    done = subprocess.run([str(CTXMILL), *compress[1:]], cwd=project, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert without_time(done.stderr) == without_time(printed_summary(text))

    commands = ctxmill_commands(text)
    assert len(commands) >= 10, commands
    port, proxy = free_port(), None
    try:
        for argv in commands:
            background = argv[-1] == "&"
            argv = [str(CTXMILL), *argv[1:-1 if background else None]]
            if argv[1] == "proxy":
                argv += ["--port", str(port)]
            if background:
                assert proxy is None, "one background proxy only"
                proxy = subprocess.Popen(argv, cwd=project, env=env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
                wait_for_proxy(port, proxy)
                continue
            done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True,
                                  timeout=120)
            assert done.returncode == 0, f"{shlex.join(argv[1:])}: {done.stderr}{done.stdout}"
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=30)
    assert proxy is not None, "README shows `ctxmill proxy &`"


def doc_pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(match) for match in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


def relative_links(page: Path) -> list[str]:
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text()))
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text)
            if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page", doc_pages(), ids=lambda page: page.name)
def test_relative_links_resolve(page):
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_the_link_check_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[a](missing.md) [b](#title) [c](#nope) `[d](x.md)` [e](https://x.org)\n"
                    "  ```\n  [f](y.md)\n  ```\n")
    assert relative_links(page) == ["missing.md", "#title", "#nope"]
    assert anchors(page) == {"title"}
