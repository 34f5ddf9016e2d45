"""purge_errors: failed calls older than 4 turns keep their error visibly, lose large inputs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ccr.markers import find_markers
from compress.formats.requests import from_provider
from compress.stages.purge_errors import STAGE
from compress.state.session import Session
from tests.chain_checks import BODIES, OPEN_CONFIG, anthropic_body, check_run, run_stages

BODY = "\n".join(f"def handler_{i}(request):\n    return respond(request, {i})" for i in range(60))
ERROR = "Error: EACCES: permission denied, open '/repo/src/app.py'\n" + "    at Object.openSync (node:fs:603:3)\n" * 40
FILLER = [("Bash", {"command": f"echo {i}"}, f"{i}") for i in range(5)]


def blocks(body: dict, kind: str) -> list:
    return [b for m in from_provider(body).messages for b in m.blocks if b.kind == kind]


@pytest.mark.parametrize("shape", ["anthropic", "openai"])
def test_old_failed_call_keeps_its_error_and_loses_its_body(shape):
    command = f"python - <<'EOF'\n{BODY}\nEOF"
    body = BODIES[shape]([("Bash", {"command": command, "description": "run it"}, ERROR, True)] + FILLER)
    out, _, store = run_stages(body, STAGE)
    use = blocks(out, "tool_use")[0]
    result = blocks(out, "tool_result")[0].result_text
    assert use.input["description"] == "run it"
    (note,) = find_markers(use.input["command"])
    assert note.kind == "note"
    assert note.summary == "122-line command stored; this call failed at turn 1"
    assert result.startswith(ERROR[:300])
    (marker,) = find_markers(result)
    assert marker.summary == f"error output cut: kept the first 300 of {len(ERROR):,} chars"
    assert check_run(body, out, store) == 2


def test_a_failed_write_loses_its_body_and_keeps_its_error_whole_only_when_protected():
    """Write is no protected tool by default: its long error is cut like any failed call's."""
    from compress.vocab.tools import PROTECTED_TOOLS

    body = anthropic_body([("Write", {"file_path": "/repo/src/app.py", "content": BODY}, ERROR, True)] + FILLER)
    for protected in (PROTECTED_TOOLS, PROTECTED_TOOLS | {"write"}):
        out, _, store = run_stages(body, STAGE, config=replace(OPEN_CONFIG, protected_tools=protected))
        (note,) = find_markers(blocks(out, "tool_use")[0].input["content"])
        assert note.summary == "120-line content for /repo/src/app.py stored; this call failed at turn 1"
        result = blocks(out, "tool_result")[0].result_text
        assert (result == ERROR) is ("write" in protected)
        assert result.startswith(ERROR[:300])
        assert check_run(body, out, store) == 1 + ("write" not in protected)


def test_age_counts_assistant_turns_from_the_anchor():
    failed = ("Write", {"file_path": "/r/a.py", "content": BODY}, ERROR, True)
    at_four = anthropic_body([failed] + FILLER[:3])   # failed call at turn 1, anchor turn 5: age 4
    assert run_stages(at_four, STAGE)[0] is at_four
    at_five = anthropic_body([failed] + FILLER[:4])
    assert run_stages(at_five, STAGE)[0] is not at_five


def test_incremental_runs_keep_the_epoch_anchor():
    """A failed call new in an incremental run is aged from the epoch's anchor, not the newest turn."""
    session = Session.memory()
    no_savings_epochs = replace(OPEN_CONFIG, epoch_savings_threshold=10**9, window_epoch_savings=10**9)
    run_stages(anthropic_body(FILLER[:1]), STAGE, session=session, config=no_savings_epochs)
    body = anthropic_body(FILLER[:1] + [("Write", {"file_path": "/r/a.py", "content": BODY}, ERROR, True)] + FILLER)
    out, report, _ = run_stages(body, STAGE, session=session, config=no_savings_epochs)
    assert report.mode == "incremental"
    assert out == body
    out, report, _ = run_stages(body, STAGE)
    assert report.mode == "epoch" and out is not body


def test_first_error_line_beyond_the_head_stays_visible():
    output = ("make[1]: Entering directory '/repo'\n" + "compiling module\n" * 60
              + "src/app.py:3: error: undefined name 'x'\n" + "done\n" * 40)
    body = anthropic_body([("Bash", {"command": "make"}, output, True)] + FILLER)
    out, _, store = run_stages(body, STAGE)
    result = blocks(out, "tool_result")[0].result_text
    assert "src/app.py:3: error: undefined name 'x'" in result
    assert find_markers(result)[0].summary.endswith("and the first error line")
    check_run(body, out, store)


def test_protected_results_stay_but_inputs_go_and_small_things_stay():
    body = anthropic_body([("Edit", {"file_path": "/r/a.py", "old_string": BODY, "new_string": "x"},
                            "<tool_use_error>String to replace not found in file.\n" + BODY + "</tool_use_error>", True),
                           ("Bash", {"command": "cat nothing"}, "cat: nothing: No such file or directory", True)] + FILLER)
    out, _, store = run_stages(body, STAGE)
    edit, cat = blocks(out, "tool_use")[:2]
    assert find_markers(edit.input["old_string"]) and edit.input["new_string"] == "x"
    assert blocks(out, "tool_result")[0].result_text.endswith("</tool_use_error>")  # Edit results are protected
    assert cat.input == {"command": "cat nothing"}
    assert check_run(body, out, store) == 1


def test_successful_calls_stay_and_second_run_changes_nothing():
    body = anthropic_body([("Write", {"file_path": "/r/a.py", "content": BODY}, "File created")] + FILLER)
    assert run_stages(body, STAGE)[0] is body
    failing = anthropic_body([("Write", {"file_path": "/r/a.py", "content": BODY}, ERROR, True)] + FILLER)
    once, _, store = run_stages(failing, STAGE)
    assert run_stages(once, STAGE, store=store)[0] == once
