"""A poll of a running command (Codex unified exec's `write_stdin`) answers with that command's
output: it is classified by the command it polls (`compress.vocab.polls`), so a read whose
output came back through a poll is a read, in every stage that decides by kind."""

from __future__ import annotations

from compress.config import CompressConfig
from compress.formats.requests import from_provider
from compress.model import TOOL_USE
from compress.stages import decide_on_arrival, trim_outputs
from compress.vocab.polls import polled_calls
from compress.vocab.tools import ToolKind, tool_kind
from tests.stagekit import openai, result_texts, run_stage

SOURCE = "\n".join(f"    value_{i} = compute_{i}(argument_{i}, other_{i})" for i in range(400))
STARTED = "Chunk ID: 4f2a\nWall time: 1.0 seconds\nProcess running with session ID 7\nOutput:\n"


def _polled_read() -> dict:
    """Codex runs `sed -n` on a slow mount; the read's lines come back through write_stdin."""
    return openai([("exec_command", {"cmd": "sed -n '1,400p' src/app.py", "yield_time_ms": 1000}, STARTED),
                   ("write_stdin", {"session_id": 7, "chars": "", "yield_time_ms": 5000},
                    "Chunk ID: 9b1c\nWall time: 4.0 seconds\nProcess exited with code 0\nOutput:\n" + SOURCE)],
                  turns_after=1)


def test_a_poll_is_classified_by_the_command_whose_session_it_polls():
    messages = from_provider(_polled_read()).messages
    polls = polled_calls(messages)
    (poll_id, (name, polled)), = polls.items()
    assert tool_kind(name, polled) is ToolKind.FILE_READ and polled["cmd"].startswith("sed -n")
    assert [b.tool_name for m in messages for b in m.blocks if b.kind == TOOL_USE and b.tool_id == poll_id] == ["write_stdin"]
    unknown = from_provider(openai([("write_stdin", {"session_id": 9, "chars": ""}, "Output:\n" + SOURCE)])).messages
    assert polled_calls(unknown) == {}


def test_a_read_that_came_back_through_a_poll_is_not_cut_on_arrival_and_a_polled_build_is():
    result, _ = run_stage(_polled_read(), decide_on_arrival.STAGE, CompressConfig())
    assert SOURCE in result_texts(result.body)[1]
    log = "\n".join(f"[{i:04d}] compiling module_{i} ... ok" for i in range(400))
    build = openai([("exec_command", {"cmd": "npm run build", "yield_time_ms": 1000}, STARTED),
                    ("write_stdin", {"session_id": 7, "chars": "", "yield_time_ms": 30000}, "Output:\n" + log)],
                   turns_after=1)
    result, _ = run_stage(build, decide_on_arrival.STAGE, CompressConfig())
    assert len(result_texts(result.body)[1]) < len(log) / 3


def test_a_fresh_read_through_a_poll_stays_whole_in_trim_outputs_like_any_fresh_read():
    config = CompressConfig(protect_tail_tokens=0, protect_tail_turns=0)
    result, _ = run_stage(_polled_read(), trim_outputs.STAGE, config)
    assert SOURCE in result_texts(result.body)[1]
