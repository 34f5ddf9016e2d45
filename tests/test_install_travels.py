"""Install that travels: user scope by default, project files without machine paths, JSONC-aware
OpenCode config edits, one command for hooks, MCP and slash commands, and a doctor that runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ground.jsonc import loads

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(root: Path, user: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXMILL_", "XDG_"))}
    env.update(HOME=str(user), XDG_CONFIG_HOME=str(user / ".config"), XDG_DATA_HOME=str(user / ".local/share"),
               PYTHONPATH=str(REPO), PATH=path if path is not None else f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def dirs(tmp_path):
    root, user = tmp_path / "proj", tmp_path / "user"
    (root / ".git").mkdir(parents=True)
    user.mkdir()
    return root, user


def _has_machine_path(text: str) -> bool:
    return str(BIN) in text or sys.executable in text


def test_user_scope_is_the_default_and_the_project_stays_untouched(dirs):
    """User files name this installation by its absolute path even though PATH finds it here: a
    host started without this shell's PATH (a venv activated here only) still runs every hook."""
    root, user = dirs
    mine = str(BIN / "ctxmill")
    for host in ("claude-code", "opencode"):
        assert _run(root, user, "install", host).returncode == 0
    assert sorted(p.name for p in root.iterdir()) == [".git"]
    settings = json.loads((user / ".claude/settings.json").read_text())
    assert settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == f"{mine} hook UserPromptSubmit"
    assert json.loads((user / ".claude.json").read_text())["mcpServers"]["ctxmill"] == {
        "type": "stdio", "command": mine, "args": ["mcp"]}
    oc = user / ".config/opencode"
    assert (oc / "plugins/ctxmill.js").read_bytes() == (REPO / "ctxmill/opencode_plugin/ctxmill.js").read_bytes()
    assert loads((oc / "opencode.json").read_text())["mcp"]["ctxmill"]["command"] == [mine, "mcp"]
    for host in ("claude-code", "opencode"):
        assert _run(root, user, "uninstall", host).returncode == 0
    assert not (oc / "plugins/ctxmill.js").exists() and not (user / ".claude/commands/dream.md").exists()


def test_project_files_name_no_path_of_this_machine_even_off_path(dirs):
    """`ctxmill` not on PATH: the project files still call `ctxmill` (and install warns); user
    files call this installation, and the slash commands the same command as the hooks."""
    root, user = dirs
    proc = _run(root, user, "install", "claude-code", "--project", path="/usr/bin:/bin")
    assert proc.returncode == 0 and "not on PATH" in proc.stderr
    for name in (".claude/settings.json", ".mcp.json", ".claude/commands/dream.md", ".claude/commands/checkpoint.md"):
        assert not _has_machine_path((root / name).read_text()), name
    assert _run(root, user, "install", "opencode", "--project", path="/usr/bin:/bin").returncode == 0
    for p in (root / ".opencode").rglob("*"):
        assert p.is_dir() or not _has_machine_path(p.read_text()), p
    assert not _has_machine_path((root / "opencode.json").read_text())

    assert _run(root, user, "install", "claude-code", path="/usr/bin:/bin").returncode == 0
    hook = json.loads((user / ".claude/settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    command = hook.removesuffix(" hook Stop")
    assert command != "ctxmill" and Path(command.split()[0]).exists()
    dream = (user / ".claude/commands/dream.md").read_text()
    assert f"Bash({command} dream:*)" in dream and f"`{command} dream`" in dream
    assert _run(root, user, "install", "opencode", path="/usr/bin:/bin").returncode == 0
    sidecar = json.loads((user / ".config/opencode/plugins/ctxmill-command.json").read_text())
    assert " ".join(sidecar["command"]) == command


def test_opencode_jsonc_config_keeps_its_comments_and_a_broken_one_is_left_alone(dirs):
    root, user = dirs
    jsonc = root / "opencode.jsonc"
    original = '{\n  // team settings\n  "model": "anthropic/claude-sonnet-4-5", /* pinned */\n  "mcp": {},\n}\n'
    jsonc.write_text(original)
    (root / ".opencode/command").mkdir(parents=True)
    (root / ".opencode/command/dream.md").write_text("<!-- installed by ctxmill -->\nold")
    assert _run(root, user, "install", "opencode", "--project").returncode == 0
    text = jsonc.read_text()
    assert "// team settings" in text and "/* pinned */" in text
    assert loads(text)["mcp"]["ctxmill"]["type"] == "local" and not (root / "opencode.json").exists()
    assert not (root / ".opencode/command/dream.md").exists()  # the legacy folder
    assert (root / ".opencode/commands/dream.md").exists()
    assert _run(root, user, "uninstall", "opencode", "--project").returncode == 0
    assert loads(jsonc.read_text()) == loads(original) and "// team settings" in jsonc.read_text()

    broken = '{\n  "model": "x",, // oops\n}\n'
    jsonc.write_text(broken)
    proc = _run(root, user, "install", "opencode", "--project")
    assert proc.returncode == 1 and "left" in proc.stderr and "not valid JSONC" in proc.stderr
    assert '"ctxmill"' in proc.stderr and jsonc.read_text() == broken
    assert (root / ".opencode/plugins/ctxmill.js").exists()


def test_doctor_runs_the_installed_hooks_mcp_server_and_engine(dirs):
    root, user = dirs
    for host in ("claude-code", "opencode"):
        assert _run(root, user, "install", host).returncode == 0
    proc = _run(root, user, "doctor")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stdout
    for want in ("Claude Code (user scope): hook PreToolUse runs", "Claude Code (user scope): hook PreCompact runs",
                 "Claude Code (user scope): MCP server answers", "OpenCode (user scope): MCP server answers",
                 "OpenCode (user scope): OpenCode engine answers"):
        assert any(line.startswith("ok       " + want) for line in lines), (want, proc.stdout)
    settings = user / ".claude/settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] = "ctxmill-missing hook UserPromptSubmit"
    settings.write_text(json.dumps(data))
    proc = _run(root, user, "doctor")
    assert proc.returncode == 1
    assert any(line.startswith("problem  Claude Code (user scope)") and "UserPromptSubmit" in line
               for line in proc.stdout.splitlines())
    assert not (root / ".ctxmill" / "checkpoint.md").exists()  # the checks ran in a scratch home
