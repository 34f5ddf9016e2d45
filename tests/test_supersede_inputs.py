"""supersede_inputs: bodies of writes and edits whose files a later read or whole write shows
again, or that have settled on disk, become notes; a later edit alone leaves them whole."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers
from compress.formats.requests import from_provider
from compress.stages.supersede_inputs import STAGE
from compress.state.session import Session
from compress.vocab.tools import PROTECTED_TOOLS
from tests.chain_checks import BODIES, MEDIUM_CONFIG, OPEN_CONFIG, anthropic_body, check_run, run_stages
from tests.stagekit import UNCHANGED_POINTER, echoed

APP = "/repo/src/app.py"
V1 = "\n".join(f"def v1_{i}():\n    return {i}" for i in range(60))
V2 = V1.replace("v1", "v2")
OLD = "\n".join(f"    line {i} of the old block" for i in range(40))
NEW = OLD.replace("old", "new")


def inputs(body: dict) -> list:
    return [b.input for m in from_provider(body).messages for b in m.blocks if b.kind == "tool_use"]


def note_of(text: str):
    (note,) = find_markers(text)
    assert note.kind == "note" and text == text[note.start:note.end]
    return note


REPLACED = "40-line old_string of {path} stored; this edit replaced it, the file no longer holds it"

CHANGED_AGAIN_ONLY = replace(OPEN_CONFIG, stage_options={"supersede_inputs": {"settled_after_turns": 0}})
"""Only bodies whose files a later call showed again are superseded."""
SETTLED_AFTER_2 = replace(OPEN_CONFIG, stage_options={"supersede_inputs": {"settled_after_turns": 2,
                                                                          "settled_tier": "always"}})
"""Bodies also settle once their files are left alone for 2 turns (the default is 12), at any tier."""


def run(body: dict, config=CHANGED_AGAIN_ONLY):
    return run_stages(body, STAGE, config=config)


@pytest.mark.parametrize("shape", ["anthropic", "openai"])
def test_bodies_shown_again_become_notes_and_the_latest_write_stays_until_read(shape):
    body = BODIES[shape]([
        ("Write", {"file_path": APP, "content": V1}, "File created"),
        ("Read", {"file_path": APP}, V1),
        ("Edit", {"file_path": APP, "old_string": OLD, "new_string": NEW, "replace_all": False}, "ok"),
        ("Write", {"file_path": APP, "content": V2}, "File written"),
        ("Bash", {"command": "pytest -q"}, "3 passed"),
    ])
    out, report, store = run(body)
    write, _, edit, latest, _ = inputs(out)
    assert note_of(write["content"]).summary == "120-line body of /repo/src/app.py stored; the file was re-read at turn 2"
    assert write["file_path"] == APP
    assert note_of(edit["old_string"]).summary == "40-line old_string of /repo/src/app.py stored; the file was rewritten at turn 4"
    assert note_of(edit["new_string"]).summary == "40-line new_string stored"  # the note beside it says where and why
    assert edit["replace_all"] is False
    assert latest == {"file_path": APP, "content": V2}  # nothing shows the file again: the agent's only copy
    assert check_run(body, out, store) == 3
    assert report.stages_saved["supersede_inputs"] > 0

    reread = BODIES[shape]([*[("Write", {"file_path": APP, "content": V2}, "ok")],
                            ("Read", {"file_path": APP}, V2), ("Bash", {"command": "pytest -q"}, "3 passed")])
    noted, _, store = run(reread)
    assert note_of(inputs(noted)[0]["content"]).summary == "120-line body of /repo/src/app.py stored; the file was re-read at turn 2"
    check_run(reread, noted, store)


def test_a_later_edit_leaves_the_body_the_agent_copies_from_whole():
    """The agent edits its own Write body again without reading the file: the body is the only
    copy of the lines the next edit replaces, so the edit does not supersede it."""
    heredoc = f"mkdir -p src && cat > src/app.py <<'EOF'\n{V1}\nEOF"
    first_edit = ("Edit", {"file_path": APP, "old_string": OLD, "new_string": NEW}, "ok")
    body = anthropic_body([("Bash", {"command": heredoc, "description": "write app"}, ""), first_edit,
                           ("Edit", {"file_path": APP, "old_string": NEW, "new_string": OLD}, "ok"),
                           ("Bash", {"command": "pytest -q"}, "3 passed")])
    out, _, store = run(body)
    bash, edit, _, _ = inputs(out)
    assert bash["command"] == heredoc and edit["new_string"] == NEW
    check_run(body, out, store)


def test_heredoc_command_is_noted_whole_and_paths_match_relative_to_absolute():
    heredoc = f"mkdir -p src && cat > src/app.py <<'EOF'\n{V1}\nEOF"
    body = anthropic_body([("Bash", {"command": heredoc, "description": "write app"}, ""),
                           ("Edit", {"file_path": APP, "old_string": OLD, "new_string": NEW}, "ok"),
                           ("Read", {"file_path": APP}, f"{V1}\n{NEW}")])
    out, _, store = run(body)
    bash, edit, _ = inputs(out)
    assert note_of(bash["command"]).summary == "122-line heredoc command of src/app.py stored; the file was re-read at turn 3"
    assert bash["description"] == "write app"
    assert note_of(edit["old_string"]).summary == "40-line old_string of /repo/src/app.py stored; the file was re-read at turn 3"
    assert note_of(edit["new_string"]).summary == "40-line new_string stored"  # the read shows it again
    check_run(body, out, store)


def test_a_reread_the_host_answers_with_a_pointer_does_not_show_the_body_again():
    """Claude Code answers a Read of a file it knows is unchanged with a pointer back to the
    earlier Read: nothing shows the written lines again, so the Write body stays the copy."""
    pointer = ("Read", {"file_path": APP}, UNCHANGED_POINTER)
    body = anthropic_body([("Write", {"file_path": APP, "content": V1}, "ok"), pointer,
                           ("Bash", {"command": "pytest -q"}, "3 passed")])
    out, _, _ = run(body)
    assert inputs(out)[0] == {"file_path": APP, "content": V1}
    shown = anthropic_body([("Write", {"file_path": APP, "content": V1}, "ok"), ("Read", {"file_path": APP}, V1),
                            ("Bash", {"command": "pytest -q"}, "3 passed")])
    assert note_of(inputs(run(shown)[0])[0]["content"]).summary.endswith("the file was re-read at turn 2")


def numbered(text: str, first: int = 1) -> str:
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(text.split("\n"), first))


def test_a_read_of_part_of_the_file_leaves_the_rest_of_the_body_whole():
    """A read with an offset and limit (or `sed -n`, `wc -l`) shows a few lines of the file; the
    agent copies its next edit of the rest out of its own body, so the body stays until the
    reads show nearly all of it, and the note names the read that completes it."""
    lines = V1.split("\n")
    head = ("Read", {"file_path": APP, "offset": 1, "limit": 20}, numbered("\n".join(lines[:20])))
    count = ("Bash", {"command": f"wc -l {APP}"}, f"120 {APP}")
    body = anthropic_body([("Write", {"file_path": APP, "content": V1}, "ok"), head, count,
                           ("Bash", {"command": "pytest -q"}, "3 passed")])
    out, _, _ = run(body)
    assert inputs(out)[0] == {"file_path": APP, "content": V1}
    rest = ("Read", {"file_path": APP, "offset": 21, "limit": 100}, numbered("\n".join(lines[20:]), 21))
    completed = anthropic_body([("Write", {"file_path": APP, "content": V1}, "ok"), head, count, rest,
                                ("Bash", {"command": "pytest -q"}, "3 passed")])
    out, _, store = run(completed)
    assert note_of(inputs(out)[0]["content"]).summary == "120-line body of /repo/src/app.py stored; the file was re-read at turn 4"
    check_run(completed, out, store)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 119), st.integers(1, 120)), min_size=1, max_size=4))
def test_a_body_is_noted_once_later_reads_show_nine_in_ten_of_its_lines(ranges):
    lines = V1.split("\n")
    reads = [("Read", {"file_path": APP, "offset": start + 1, "limit": length},
              numbered("\n".join(lines[start:start + length]), start + 1)) for start, length in ranges]
    body = anthropic_body([("Write", {"file_path": APP, "content": V1}, "ok"), *reads,
                           ("Bash", {"command": "pytest -q"}, "3 passed")])
    shown = {line.strip() for start, length in ranges for line in lines[start:start + length]}
    written = {line.strip() for line in lines if len(line.strip()) >= 4}
    out, _, store = run(body)
    assert (inputs(out)[0]["content"] != V1) == (len(shown & written) >= 0.9 * len(written))
    check_run(body, out, store)


def test_a_bare_file_name_is_not_matched_to_an_absolute_path():
    body = anthropic_body([("Bash", {"command": f"cat > app.py <<'EOF'\n{V1}\nEOF"}, ""),
                           ("Write", {"file_path": APP, "content": V2}, "ok")])
    assert run(body)[0] is body


def test_failed_followers_do_not_supersede():
    body = anthropic_body([("Write", {"file_path": APP, "content": V1}, "ok"),
                           ("Write", {"file_path": APP, "content": V2}, "Error: permission denied", True),
                           ("Read", {"file_path": APP}, "Error: permission denied", True)])
    assert run(body)[0] is body


def test_patches_are_noted_only_when_every_file_is_shown_again():
    """The note names the touch by which every file has been shown again."""
    patch = "*** Begin Patch\n*** Update File: src/a.py\n" + "+x\n" * 400 + "*** Update File: src/b.py\n+y\n*** End Patch"
    later_a = ("Write", {"file_path": "/repo/src/a.py", "content": V2}, "ok")
    edited_b = ("Edit", {"file_path": "/repo/src/b.py", "old_string": "y", "new_string": "z"}, "ok")
    assert inputs(run(anthropic_body([("apply_patch", {"input": patch}, "Done"), later_a, edited_b]))[0])[0]["input"] == patch
    later_b = ("Read", {"file_path": "/repo/src/b.py"}, "z")
    only_a = anthropic_body([("apply_patch", {"input": patch}, "Done"), later_a])
    assert run(only_a)[0] is only_a
    both = anthropic_body([("apply_patch", {"input": patch}, "Done"), later_a, later_b])
    out, _, store = run(both)
    assert note_of(inputs(out)[0]["input"]).summary == (
        "405-line patch of src/a.py (+1 more files) stored; the file was re-read at turn 3")
    check_run(both, out, store)


def test_a_settled_patch_whose_files_changed_in_part_does_not_claim_no_later_change():
    patch = "*** Begin Patch\n*** Update File: src/a.py\n" + "+x\n" * 400 + "*** Update File: src/b.py\n+y\n*** End Patch"
    body = anthropic_body([("apply_patch", {"input": patch}, "Done"),
                           ("Write", {"file_path": "/repo/src/a.py", "content": V2}, "ok"),
                           ("Bash", {"command": "pytest -q"}, "ok")])
    out, _, store = run(body, SETTLED_AFTER_2)
    assert note_of(inputs(out)[0]["input"]).summary == "405-line patch of src/a.py (+1 more files) stored; edit made at turn 1"
    check_run(body, out, store)


def test_small_bodies_stay_and_min_chars_is_an_option():
    small = "\n".join(f"x{i}" for i in range(100))  # 389 chars, under the default 500
    body = anthropic_body([("Write", {"file_path": APP, "content": small}, "ok"),
                           ("Write", {"file_path": APP, "content": V2}, "ok")])
    assert run(body)[0] is body
    config = replace(OPEN_CONFIG, stage_options={"supersede_inputs": {"min_chars": 300, "settled_after_turns": 0}})
    out, _, _ = run_stages(body, STAGE, config=config)
    assert find_markers(inputs(out)[0]["content"])


def test_runs_at_every_tier_and_is_idempotent():
    body = anthropic_body([("Write", {"file_path": APP, "content": V1}, "ok"),
                           ("Write", {"file_path": APP, "content": V2}, "ok")])
    for config in (CHANGED_AGAIN_ONLY, replace(MEDIUM_CONFIG, stage_options=CHANGED_AGAIN_ONLY.stage_options)):
        once, _, store = run(body, config)
        assert once is not body
        assert run_stages(once, STAGE, config=config, store=store)[0] == once


def test_settled_writes_and_edits_become_notes_and_keep_their_results():
    snippet = "The file /repo/src/app.py has been updated. Here's the result of running `cat -n`:\n  1\tline 0 of the new block"
    body = anthropic_body([("Write", {"file_path": APP, "content": V1}, "File created"),
                           ("Edit", {"file_path": "/repo/src/b.py", "old_string": OLD, "new_string": NEW}, snippet),
                           ("Bash", {"command": "pytest -q"}, "3 passed"),
                           ("Bash", {"command": "git status"}, "clean")])
    out, _, store = run(body, SETTLED_AFTER_2)
    write, edit, *_ = inputs(out)
    assert note_of(write["content"]).summary == ("120-line body of /repo/src/app.py stored; written at turn 1,"
                                                 " no later change to the file")
    assert note_of(edit["old_string"]).summary == ("40-line old_string of /repo/src/b.py stored; edit made at"
                                                   " turn 2, no later change to the file")
    assert note_of(edit["new_string"]).summary == "40-line new_string stored"
    assert edit["file_path"] == "/repo/src/b.py"
    results = [b.result_text for m in from_provider(out).messages for b in m.blocks if b.kind == "tool_result"]
    assert results[:2] == ["File created", snippet]
    assert check_run(body, out, store) == 3

    young = replace(OPEN_CONFIG, stage_options={"supersede_inputs": {"settled_after_turns": 4, "settled_tier": "always"}})
    write, edit, *_ = inputs(run(body, young)[0])
    assert find_markers(write["content"]) and edit["new_string"] == NEW  # the edit is 3 turns old: whole


def test_a_body_settles_only_once_its_file_is_quiet():
    """A write whose file the agent goes on editing is not settled, however old: the next edit
    copies its old text out of the body; once no call touched the file for `settled_after_turns`
    turns, it is."""
    edit = ("Edit", {"file_path": APP, "old_string": "def v1_3", "new_string": "def v1_3b"}, "ok")
    busy = anthropic_body([("Write", {"file_path": APP, "content": V1}, "ok"),
                           ("Bash", {"command": "pytest -q"}, "1 failed"), ("Bash", {"command": "pytest -x"}, "1 failed"),
                           edit, ("Bash", {"command": "pytest -q"}, "ok")])
    config = replace(OPEN_CONFIG, stage_options={"supersede_inputs": {"settled_after_turns": 3, "settled_tier": "always"}})
    out, _, _ = run(busy, config)
    assert inputs(out)[0]["content"] == V1  # 5 turns old, but its file was edited 2 turns ago
    quiet = anthropic_body([("Write", {"file_path": APP, "content": V1}, "ok"), edit,
                            *[("Bash", {"command": f"pytest -k t{i}"}, "ok") for i in range(3)]])
    out, _, store = run(quiet, config)
    assert note_of(inputs(out)[0]["content"]).summary.endswith("written at turn 1")
    check_run(quiet, out, store)


def test_a_frozen_write_stays_until_the_next_epoch():
    session = Session.memory()
    first = [("Write", {"file_path": APP, "content": V1}, "ok")]
    run_stages(anthropic_body(first), STAGE, config=CHANGED_AGAIN_ONLY, session=session)
    body = anthropic_body(first + [("Write", {"file_path": APP, "content": V2}, "ok")])
    out, report, _ = run_stages(body, STAGE, config=CHANGED_AGAIN_ONLY, session=session)
    assert report.mode == "incremental" and inputs(out)[0]["content"] == V1
    out, report, _ = run(body)
    assert report.mode == "epoch" and find_markers(inputs(out)[0]["content"])


@pytest.mark.parametrize("shape", ["anthropic", "openai"])
def test_the_text_a_successful_edit_replaced_is_noted_on_arrival_tail_included(shape):
    edit = ("Edit", {"file_path": APP, "old_string": OLD, "new_string": NEW, "replace_all": False}, "ok")
    body = BODIES[shape]([("Read", {"file_path": APP}, V1), edit])
    out, report, store = run_stages(body, STAGE)  # the edit is in the protected tail and not settled
    _, noted = inputs(out)
    assert note_of(noted["old_string"]).summary == REPLACED.format(path=APP)
    assert noted["new_string"] == NEW and noted["file_path"] == APP and noted["replace_all"] is False
    assert check_run(body, out, store) == 1

    failed = BODIES[shape]([("Read", {"file_path": APP}, V1), (*edit[:2], "Error: String to replace not found in file.", True)])
    small = BODIES[shape]([("Edit", {"file_path": APP, "old_string": OLD[:400], "new_string": NEW}, "ok")])
    assert run_stages(failed, STAGE)[0] is failed
    assert run_stages(small, STAGE)[0] is small  # replaced texts of 500 characters or less stay


def test_a_multiedit_notes_each_replaced_text_and_keeps_its_new_texts():
    parts = [{"old_string": OLD, "new_string": NEW}, {"old_string": OLD.replace("old", "former"), "new_string": "x"}]
    body = anthropic_body([("MultiEdit", {"file_path": APP, "edits": parts}, "Applied 2 edits")])
    out, _, store = run_stages(body, STAGE)
    (noted,) = inputs(out)
    assert [note_of(p["old_string"]).summary for p in noted["edits"]] == [REPLACED.format(path=APP)] * 2
    assert [p["new_string"] for p in noted["edits"]] == [NEW, "x"]
    check_run(body, out, store)


def test_a_replaced_text_renders_the_same_in_every_request_until_the_edit_is_superseded():
    session = Session.memory()
    edit = ("Edit", {"file_path": APP, "old_string": OLD, "new_string": NEW}, "ok")
    first, _, _ = run_stages(anthropic_body([edit]), STAGE, session=session)
    later = anthropic_body([edit, ("Bash", {"command": "pytest -q"}, "3 passed")])
    incremental, report, _ = run_stages(later, STAGE, session=session)
    epoch, epoch_report, _ = run(later)
    assert report.mode == "incremental" and epoch_report.mode == "epoch"
    assert inputs(first)[0] == inputs(incremental)[0] == inputs(epoch)[0]
    superseded, _, _ = run(anthropic_body([edit, ("Write", {"file_path": APP, "content": V2}, "ok")]))
    assert note_of(inputs(superseded)[0]["old_string"]).summary.endswith("the file was rewritten at turn 2")


def echo(text: str) -> str:
    """Claude Code's result of a Write over an existing file: the file, numbered."""
    numbered = "\n".join(f"{n:>6}→{line}" for n, line in enumerate(text.split("\n"), 1))
    return f"The file {APP} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{numbered}"


ECHO_KEPT = replace(OPEN_CONFIG, protected_tools=PROTECTED_TOOLS | {"write"})
"""Write's results are never cut (the user protects write), so its echo of the file is a copy that stays."""


def test_a_written_body_the_result_shows_line_for_line_is_noted_on_arrival():
    rewrite = anthropic_body([("Write", {"file_path": APP, "content": V1}, echo(V1))])
    out, _, store = run_stages(rewrite, STAGE, config=ECHO_KEPT)
    (noted,) = inputs(out)
    assert note_of(noted["content"]).summary == f"120-line body of {APP} stored; the result of this call shows every line of it"
    assert check_run(rewrite, out, store) == 1
    created = anthropic_body([("Write", {"file_path": APP, "content": V1}, f"File created successfully at: {APP}")])
    partial = anthropic_body([("Write", {"file_path": APP, "content": V1}, echo(V1.replace("return 7", "return 8")))])
    assert run_stages(created, STAGE, config=ECHO_KEPT)[0] is created
    assert run_stages(partial, STAGE, config=ECHO_KEPT)[0] is partial


def test_a_body_whose_echo_may_be_cut_later_stays_the_agents_copy():
    """By default write is not protected: trim_outputs may cut its echo once it is old, so the
    body is not noted at birth (it would leave no copy of the file)."""
    rewrite = anthropic_body([("Write", {"file_path": APP, "content": V1}, echo(V1))])
    assert run_stages(rewrite, STAGE)[0] is rewrite


PLAN = "\n".join(f"{n}. Step {n}: change module_{n} and test it" for n in range(1, 40))
APPROVED = ("User has approved your plan. You can now start coding. Start with updating your todo list if "
            f"applicable\n\nYour plan has been saved to: /home/u/.claude/plans/p.md\n\n## Approved Plan:\n{PLAN}")


def test_a_plan_the_protected_answer_quotes_whole_is_noted_on_arrival_and_the_answer_kept():
    """ExitPlanMode's approval quotes the plan: the call's copy becomes a note, the answer (a
    protected result) is never touched. A rejected plan, or a plan tool the user unprotects,
    keeps its input."""
    approved = anthropic_body([("ExitPlanMode", {"plan": PLAN}, APPROVED)])
    out, _, store = run_stages(approved, STAGE)
    (noted,) = inputs(out)
    assert note_of(noted["plan"]).summary == "39-line plan stored; the result of this call shows every line of it"
    assert [b.result_text for m in from_provider(out).messages for b in m.blocks if b.kind == "tool_result"][0] == APPROVED
    assert check_run(approved, out, store) == 1
    rejected = anthropic_body([("ExitPlanMode", {"plan": PLAN}, "The user doesn't want to proceed with this tool use.")])
    assert run_stages(rejected, STAGE)[0] is rejected
    unprotected = replace(OPEN_CONFIG, protected_tools=PROTECTED_TOOLS - {"exitplanmode"})
    assert run_stages(approved, STAGE, config=unprotected)[0] is approved


@given(st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=80),
                min_size=20, max_size=60), st.integers(0, 2))
@settings(max_examples=80, deadline=None)
def test_a_body_is_noted_on_arrival_exactly_when_its_result_shows_its_lines_in_a_row(lines, change):
    body_text = "\n".join(lines)
    shown_lines = echoed(lines, change)
    body = anthropic_body([("Write", {"file_path": APP, "content": body_text}, echo("\n".join(shown_lines)))])
    out, _, store = run_stages(body, STAGE, config=ECHO_KEPT)
    content = inputs(out)[0]["content"]
    in_a_row = f"\n{body_text.rstrip(chr(10))}\n" in f"\n{chr(10).join(shown_lines)}\n"
    if content != body_text:
        assert in_a_row and any(line.strip() for line in lines) and len(body_text) > 500
        check_run(body, out, store)
    elif in_a_row and any(line.strip() for line in lines) and len(body_text) > 2_000:
        raise AssertionError("a long body its result shows whole was kept")


def with_thinking(body: dict, tool_name: str) -> dict:
    """`body` with a signed thinking block opening the assistant message that calls `tool_name`."""
    for msg in body["messages"]:
        if msg["role"] == "assistant" and isinstance(msg["content"], list) and any(
                b.get("name") == tool_name for b in msg["content"]):
            msg["content"].insert(0, {"type": "thinking", "thinking": "I will edit it.", "signature": "sig" + "A" * 40})
    return body


def test_the_calls_of_the_latest_reply_keep_their_inputs_while_it_carries_thinking():
    edit = ("Edit", {"file_path": APP, "old_string": OLD, "new_string": NEW}, "ok")
    latest = with_thinking(anthropic_body([edit]), "Edit")
    latest["messages"] = latest["messages"][:-2]  # the edit's reply is the latest: no "done" after it
    assert run_stages(latest, STAGE)[0] is latest
    answered = with_thinking(anthropic_body([edit]), "Edit")  # a later reply ("done") follows it
    out, _, store = run_stages(answered, STAGE)
    assert note_of(inputs(out)[0]["old_string"]).summary == REPLACED.format(path=APP)
    check_run(answered, out, store)


def test_a_subagents_prompt_settles_like_a_write_and_keeps_its_description():
    """Once the call is `settled_after_turns` old and out of the protected tail, its report is
    history too (trim_outputs cuts it after `report_fresh_turns`): the prompt becomes a note,
    the short description stays. A user who protects the tool keeps both whole."""
    prompt = "\n".join(f"Step {i}: inspect module_{i} and report what it exports" for i in range(40))
    task = ("Task", {"description": "Survey the modules", "prompt": prompt, "subagent_type": "Explore"},
            "The modules export handlers.")
    filler = [("Bash", {"command": f"echo {i}"}, f"{i}") for i in range(4)]
    body = anthropic_body([task] + filler)
    out, _, store = run(body, SETTLED_AFTER_2)
    noted = inputs(out)[0]
    assert (noted["description"], noted["subagent_type"]) == ("Survey the modules", "Explore")
    assert note_of(noted["prompt"]).summary == "40-line prompt stored; the subagent ran at turn 1"
    assert check_run(body, out, store) == 1
    young = anthropic_body([task])
    assert run(young, SETTLED_AFTER_2)[0] is young
    assert run(body, replace(SETTLED_AFTER_2, protected_tools=PROTECTED_TOOLS | {"task"}))[0] is body
    assert run(body, CHANGED_AGAIN_ONLY)[0] is body


def test_by_default_a_quiet_body_settles_only_under_real_pressure():
    """The only-copy rule (settled_tier "high", the default): a write's body the agent may still
    copy from is cut by age only when the tier says the host compacts soon; "always" cuts it at
    any tier."""
    from compress.tiers import TierThresholds

    body = anthropic_body([("Write", {"file_path": APP, "content": V1}, "File created"),
                           ("Bash", {"command": "pytest -q"}, "3 passed"),
                           ("Bash", {"command": "git status"}, "clean"),
                           ("Bash", {"command": "git log"}, "one commit")])
    calm = replace(OPEN_CONFIG, stage_options={"supersede_inputs": {"settled_after_turns": 2}})
    assert inputs(run(body, calm)[0])[0]["content"] == V1
    explicit = replace(OPEN_CONFIG, stage_options={"supersede_inputs": {"settled_after_turns": 2,
                                                                        "settled_tier": "high"}})
    assert inputs(run(body, explicit)[0])[0]["content"] == V1
    medium = replace(calm, tiers=TierThresholds(medium=1, high=10**9))
    assert inputs(run(body, medium)[0])[0]["content"] == V1
    pressed = replace(calm, tiers=TierThresholds(medium=1, high=1))
    assert find_markers(inputs(run(body, pressed)[0])[0]["content"])
    assert find_markers(inputs(run(body, SETTLED_AFTER_2)[0])[0]["content"])  # "always": at any tier
