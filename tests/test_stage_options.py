"""`[compress.stages.*]` is checked at load against each stage's options dataclass (`Stage.options`):
a misspelt stage or key, or a value of the wrong type, is one ConfigError line naming the file and
the key, like every other config key; the values that are right reach the stage."""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys

import pytest

from compress.runner.pipeline import DEFAULT_STAGES
from ctxmill.errors import ConfigError
from ctxmill.settings import Settings


def _load(home, text: str):
    (home / "config.toml").write_text(text)
    return Settings.load(home).compress


def _one_line_error(home, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(home, text)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(home / "config.toml") + ": ")
    return message


@pytest.mark.parametrize("text, says", [
    ("[compress.stages.trim_outputs]\ncold_after_turn = 5",
     "unknown key compress.stages.trim_outputs.cold_after_turn (did you mean cold_after_turns?)"),
    ("[compress.stages.trim_output]\ncold_after_turns = 5",
     "unknown stage compress.stages.trim_output (did you mean trim_outputs?)"),
    ("[compress.stages.trim_outputs]\ncold_after_turns = '5'",
     "compress.stages.trim_outputs.cold_after_turns must be an integer, got '5'"),
    ("[compress.stages.trim_outputs]\ncold_scale = true",
     "compress.stages.trim_outputs.cold_scale must be a number, got True"),
    ("[compress.stages.trim_outputs]\ntier_scale = { always = 'big' }",
     "compress.stages.trim_outputs.tier_scale must be a table of numbers, got {'always': 'big'}"),
    ("[compress.stages.trim_outputs]\ncold_since = 'never'",
     "compress.stages.trim_outputs: trim_outputs.cold_since must be one of read, last_change, got 'never'"),
    ("[compress.stages.strip_injections]\ntags = 'system-reminder'",
     "compress.stages.strip_injections.tags must be a list of strings, got 'system-reminder'"),
    ("[compress.stages.dedup_tool_calls]\nmin_chars = 5",
     "unknown key compress.stages.dedup_tool_calls.min_chars (the stage takes no options)"),
    ("[compress.stages]\ntrim_outputs = 5", "compress.stages.trim_outputs must be a table"),
])
def test_a_wrong_stage_option_is_one_line_naming_the_file_and_key(tmp_path, text, says):
    assert _one_line_error(tmp_path, text).endswith(says)


def _user_and_project(tmp_path, monkeypatch, user_text: str):
    """(the user's config file holding `user_text`, an empty project home)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    user = tmp_path / "xdg" / "ctxmill"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(user_text)
    project = tmp_path / "proj"
    project.mkdir()
    return user, project


def test_the_users_own_config_is_checked_too(tmp_path, monkeypatch):
    """The user's config.toml (the global home's) and a project's are each checked, and the
    error names the file that holds the typo."""
    user, project = _user_and_project(tmp_path, monkeypatch, "[compress.stages.supersede_inputs]\nsettled_after_turn = 3\n")
    with pytest.raises(ConfigError, match=re.escape(f"{user / 'config.toml'}: unknown key "
                                                    "compress.stages.supersede_inputs.settled_after_turn")):
        Settings.load(project).compress


def test_a_projects_stage_options_are_still_taken_and_checked(tmp_path, monkeypatch):
    """A project may set stage options (ctxmill.provenance: `[compress] stages` is allow-listed,
    its table replacing the user's); they are checked like the user's."""
    _, project = _user_and_project(tmp_path, monkeypatch, "[compress.stages.trim_outputs]\ncold_after_turns = 20\n")
    config = _load(project, "[compress.stages.trim_outputs]\ncold_after_turns = 5\ncold_scale = 1\n")
    assert config.options("trim_outputs") == {"cold_after_turns": 5, "cold_scale": 1.0}
    assert isinstance(config.options("trim_outputs")["cold_scale"], float)
    assert _one_line_error(project, "[compress.stages.trim_outputs]\ncold_afer_turns = 5\n").endswith(
        "unknown key compress.stages.trim_outputs.cold_afer_turns (did you mean cold_after_turns?)")


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return repr(value)


OPTION_FIELDS = [(stage.name, f.name) for stage in DEFAULT_STAGES if stage.options
                 for f in dataclasses.fields(stage.options)]


@pytest.mark.parametrize("stage, key", OPTION_FIELDS)
def test_every_option_a_stage_declares_loads_with_its_default_and_reaches_the_stage(tmp_path, stage, key):
    cls = next(s.options for s in DEFAULT_STAGES if s.name == stage)
    default = getattr(cls(), key)
    config = _load(tmp_path, f"[compress.stages.{stage}]\n{key} = {_toml(default)}\n")
    got = config.options(stage)[key]
    assert got == (list(default) if isinstance(default, tuple) else default)
    assert getattr(dataclasses.replace(cls(), **{key: got}), key) == got


def test_every_stage_that_reads_options_declares_them():
    """A stage that reads `config.options(NAME)` names NAME's options dataclass, or its keys
    would be taken unchecked."""
    declared = {stage.name for stage in DEFAULT_STAGES if stage.options}
    read = set()
    for stage in DEFAULT_STAGES:
        source = inspect.getsource(sys.modules[stage.run.__module__])
        read |= set(re.findall(r"options\(\"(\w+)\"\)", source))
    assert read and read <= declared
