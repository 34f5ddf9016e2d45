"""What a short-lived `ctxmill` process imports: hooks start one per prompt, so each command
imports only what it needs. `--version`, `--help` and a mistyped command import no command
module; SessionStart answers and ends, and consolidates memory in a detached process."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import ctxmill
from ctxmill.cli import COMMANDS, SUMMARIES

REPO = Path(__file__).resolve().parents[1]


def _imports(args: list[str], tmp_path: Path, stdin: str = "") -> tuple[subprocess.CompletedProcess, set[str]]:
    """The process's result and the modules it imported (`python -X importtime`)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / ".ctxmill"),
           "XDG_DATA_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "user")}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "ctxmill", *args], input=stdin, text=True,
                          capture_output=True, env=env, cwd=tmp_path, timeout=120)
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done, modules


def test_version_and_help_import_no_command_module(tmp_path):
    for args in (["--version"], ["--help"], ["no-such-command"]):
        done, modules = _imports(args, tmp_path)
        assert not {m for m in modules if m.startswith("ctxmill.commands")}, args
    done, modules = _imports(["--version"], tmp_path)
    assert done.stdout == f"ctxmill {ctxmill.__version__}\n" and "ctxmill 0." in done.stdout
    assert not modules & {"importlib.metadata", "logging"}  # the version is ctxmill.__version__


def test_help_lists_every_command_as_its_module_registers_it():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    for module in dict.fromkeys(COMMANDS.values()):
        importlib.import_module(f"ctxmill.commands.{module}").register(sub)
    assert {a.dest: a.help for a in sub._choices_actions} == SUMMARIES
    assert set(SUMMARIES) == set(COMMANDS)


def test_session_start_answers_without_consolidating_and_consolidates_after(tmp_path):
    (tmp_path / ".ctxmill").mkdir()
    event = json.dumps({"session_id": "s", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path),
                        "hook_event_name": "SessionStart", "source": "startup"})
    done, modules = _imports(["hook", "SessionStart"], tmp_path, event)
    assert done.returncode == 0 and "additionalContext" in done.stdout
    assert not modules & {"memory.dream", "memory.statements", "compress.state.session"}  # the answer's process
    deadline = time.monotonic() + 30
    while not (tmp_path / ".ctxmill" / ".gitignore").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / ".ctxmill" / ".gitignore").exists()  # consolidation ran, detached


def test_session_start_consolidates_a_home_at_most_once_an_hour(tmp_path, monkeypatch):
    """Nothing to consolidate without a project home; a fresh home is due; once consolidated
    (its stamp written first), not again for TIDY_EVERY_S; a stamp in the future (a clock set
    back) does not put it off for good."""
    from ctxmill.hooks import TIDIED_FILE, TIDY_EVERY_S, after_session_start, consolidation_due

    monkeypatch.setenv("CTXMILL_HOME", str(tmp_path / ".ctxmill"))
    event = {"cwd": str(tmp_path)}
    assert not consolidation_due(event)  # no home: nothing is due, no process is forked
    (tmp_path / ".ctxmill").mkdir()
    assert consolidation_due(event)
    after_session_start(event)
    stamp = tmp_path / ".ctxmill" / TIDIED_FILE
    assert stamp.exists() and (tmp_path / ".ctxmill" / ".gitignore").exists()
    now = stamp.stat().st_mtime
    assert not consolidation_due(event, now + TIDY_EVERY_S - 1)
    assert consolidation_due(event, now + TIDY_EVERY_S)
    assert consolidation_due(event, now - 60)
    stamp.unlink()
    stamp.symlink_to(tmp_path / ".ctxmill" / ".gitignore")  # a link a repository shipped is no stamp
    assert consolidation_due(event, now)
    after_session_start(event)
    assert not stamp.is_symlink() and not consolidation_due(event)


def test_install_compiles_the_bytecode_of_the_packages_it_names(tmp_path):
    from ctxmill.commands.install import compile_bytecode

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("X = 1\n")
    (package / "mod.py").write_text("def f():\n    return 2\n")
    assert compile_bytecode([package]) is None
    assert {p.name.split(".")[0] for p in (package / "__pycache__").glob("*.pyc")} == {"__init__", "mod"}


def test_a_hook_imports_no_parser_formatter_and_no_temp_files_module(tmp_path):
    """`ctxmill hook EVENT` is read without argparse's parser (whose formatter imports shutil and
    its compressors) and imports tempfile only to write."""
    event = json.dumps({"session_id": "s", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path),
                        "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"content": "x"}})
    done, modules = _imports(["hook", "PreToolUse"], tmp_path, event)
    assert done.returncode == 0 and done.stdout == ""
    assert not modules & {"shutil", "tempfile", "bz2", "lzma"}
    assert "invalid choice" in _imports(["hook", "NoSuchEvent"], tmp_path)[0].stderr  # still the parser's error


def test_a_quick_hook_sets_logging_up_only_when_it_logs(tmp_path):
    """PreToolUse (always-on off) imports no logging, parser, socket or typing; a hook that fails
    open still writes its line into the project log, set up when the line is written."""
    event = json.dumps({"session_id": "s", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path),
                        "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"content": "x"}})
    done, modules = _imports(["hook", "PreToolUse"], tmp_path, event)
    assert done.returncode == 0 and done.stdout == ""
    assert not modules & {"logging", "argparse", "socket", "subprocess", "typing", "ctxmill.channel", "ctxmill.keeper"}
    for name in ("UserPromptSubmit", "SessionStart", "PreToolUse"):
        done, _ = _imports(["hook", name], tmp_path, "not json")
        assert (done.returncode, done.stdout) == (0, "") and "failed open" in done.stderr
        logged = (tmp_path / ".ctxmill" / "ctxmill.log").read_text()
        assert f"ctxmill hook {name}: failed open" in logged


HEAVY = {"jieba", "regex", "logging", "argparse", "typing", "dataclasses", "inspect", "socket", "subprocess",
         "tempfile", "shutil", "memory.dream", "memory.statements", "compress.state.session", "ctxmill.channel", "ctxmill.proxy_config"}
"""What no quick hook imports in its answer's process (always-on off, an English prompt, a fresh
memory index); `dataclasses` brings `inspect` (the records on their path are `ground.records`),
`tempfile` brings `shutil` and the compressors (`ground.files.atomic_write` names its own)."""


def test_each_quick_hook_imports_only_what_its_event_needs(tmp_path):
    from bench.bench_hooks import build_memory

    home = tmp_path / ".ctxmill"
    build_memory(home, 50)
    base = {"session_id": "s", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path / "elsewhere")}
    (tmp_path / "elsewhere").mkdir()
    events = {
        "UserPromptSubmit": {"prompt": "why does the tokenizer break the bm25 index when the cache expires?"},
        "SessionStart": {"source": "startup"},
        "PreToolUse": {"tool_name": "Write", "tool_input": {"file_path": "/src/app.py", "content": "x = 1\n"}},
    }
    unwanted = {"UserPromptSubmit": HEAVY | {"memory.markdown", "repomap.api", "sqlite3", "orjson"},  # no map index yet
                "SessionStart": HEAVY | {"repomap.api", "memory.bm25.search", "orjson"},
                "PreToolUse": HEAVY | {"orjson", "memory", "repomap", "ctxmill.settings"}}
    for name, fields in events.items():
        done, modules = _imports(["hook", name], tmp_path, json.dumps({**base, "hook_event_name": name, **fields}))
        assert done.returncode == 0 and "failed open" not in done.stderr, (name, done.stderr)
        assert bool(done.stdout) == (name != "PreToolUse"), name
        assert not modules & unwanted[name], (name, modules & unwanted[name])
    assert "Relevant project memory" in _imports(["hook", "UserPromptSubmit"], tmp_path, json.dumps(
        {**base, "hook_event_name": "UserPromptSubmit", **events["UserPromptSubmit"]}))[0].stdout
    maps = tmp_path / "xdg" / "ctxmill" / "cache" / "repomap"  # the repository (CTXMILL_HOME's folder) is indexed apart
    deadline = time.monotonic() + 60
    while not list(maps.glob("*.sqlite3")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(maps.glob("*.sqlite3"))
    done, modules = _imports(["hook", "UserPromptSubmit"], tmp_path, json.dumps(  # now with the map
        {**base, "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", **events["UserPromptSubmit"]}))
    assert done.returncode == 0 and "repomap.api" in modules
    unwanted = HEAVY | {"compress.vocab.tools", "compress.vocab.touches",  # the path keys alone
                        "orjson"}  # outlines and the transcript's tail are read with the stdlib's json
    assert not modules & unwanted, modules & unwanted
