"""The only-copy rule for reads: a read is stale (cut harder by trim_outputs) only once later
messages show its lines; a later read of another range of the file shows none of them.
Client shapes: Claude Code `Read` offset/limit, Codex `exec_command` `sed -n` (Responses API),
OpenCode `read` with `offset`."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from compress.formats.requests import from_provider
from compress.stagekit.shown_again import READS_SHOW, copy_lines
from compress.stages.trim_outputs import stale_reads
from tests.stagekit import anthropic, codex_exec, openai

LINES = [f"    value_{i} = compute_{i}(x, y) + {i}" for i in range(860)]
PATH = "/repo/src/app.py"


def claude_numbered(first: int, last: int) -> str:
    """Lines first..last (1-based, inclusive) as Claude Code's Read numbers them."""
    return "\n".join(f"{n:6}\u2192{LINES[n - 1]}" for n in range(first, last + 1))


def plain(first: int, last: int) -> str:
    """Lines first..last as `sed -n 'first,lastp'` prints them."""
    return "\n".join(LINES[first - 1:last])


def opencode_numbered(first: int, last: int) -> str:
    """Lines first..last as OpenCode's read tool numbers them."""
    return "\n".join(["<file>", *(f"{n:05d}: {LINES[n - 1]}" for n in range(first, last + 1)), "</file>"])


def stale_ids(body: dict) -> set[str]:
    return stale_reads(list(from_provider(body).messages))


def claude_read(first: int, last: int) -> tuple[str, dict, str]:
    return "Read", {"file_path": PATH, "offset": first, "limit": last - first + 1}, claude_numbered(first, last)


def test_claude_code_a_read_of_another_range_leaves_the_first_read_fresh():
    body = anthropic([claude_read(1, 320), claude_read(320, 860)])
    assert stale_ids(body) == set()
    again = anthropic([claude_read(1, 320), claude_read(320, 860), ("Read", {"file_path": PATH}, claude_numbered(1, 860))])
    assert stale_ids(again) == {"toolu_000", "toolu_001"}


def test_codex_sed_ranges_count():
    head, rest = ("sed -n '1,320p' src/app.py", plain(1, 320)), ("sed -n '320,860p' src/app.py", plain(320, 860))
    assert stale_ids(codex_exec([head, rest])) == set()
    assert stale_ids(codex_exec([head, rest, ("cat src/app.py", plain(1, 860))])) == {"call_0", "call_1"}
    # the same range read again shows every line of the first read
    assert stale_ids(codex_exec([head, ("sed -n '1,320p' src/app.py", plain(1, 320))])) == {"call_0"}


def test_opencode_read_with_offset():
    first = ("read", {"filePath": PATH, "offset": 0, "limit": 320}, opencode_numbered(1, 320))
    other = ("read", {"filePath": PATH, "offset": 320, "limit": 540}, opencode_numbered(321, 860))
    assert stale_ids(openai([first, other])) == set()
    assert stale_ids(openai([first, other, ("read", {"filePath": PATH}, opencode_numbered(1, 860))])) == {"call_0", "call_1"}


def test_a_whole_write_or_a_deletion_leaves_nothing_to_copy_and_a_move_does_not_show_the_lines():
    for later, stale in ((("Write", {"file_path": PATH, "content": "x = 1"}, "ok"), True),
                         (("Bash", {"command": f"rm {PATH}"}, ""), True),
                         (("Bash", {"command": f"mv {PATH} /repo/src/main.py"}, ""), False),
                         (("Edit", {"file_path": PATH, "old_string": LINES[3], "new_string": "y"}, "ok"), False)):
        assert stale_ids(anthropic([claude_read(1, 320), later])) == ({"toolu_000"} if stale else set()), later


@settings(max_examples=60, deadline=None)
@given(first=st.tuples(st.integers(1, 860), st.integers(0, 400)),
       later=st.lists(st.tuples(st.integers(1, 860), st.integers(0, 400)), min_size=1, max_size=4))
def test_a_read_is_stale_only_when_later_reads_show_its_lines(first, later):
    """Whatever ranges the later reads cover, the first read is stale exactly when they show
    `READS_SHOW` of its distinct lines: its lines are never hidden as stale while they are the
    agent's only copy."""
    ranges = [(start, min(860, start + length)) for start, length in [first, *later]]
    body = anthropic([claude_read(a, b) for a, b in ranges])
    wanted = copy_lines(claude_numbered(*ranges[0]), numbered=True)
    shown = set().union(*(copy_lines(claude_numbered(a, b), numbered=True) for a, b in ranges[1:]))
    assert ("toolu_000" in stale_ids(body)) == (len(wanted & shown) >= READS_SHOW * len(wanted))


def test_codex_a_read_whose_lines_came_back_through_a_poll_shows_a_patch_body_again():
    """supersede_inputs asks the same test of a body: a `sed -n` whose output a write_stdin poll
    carries shows the file the patch created, so the patch body becomes a note."""
    from compress.stages import supersede_inputs
    from tests.stagekit import OPEN, run_stage

    body_lines = LINES[:60]
    patch = "*** Begin Patch\n*** Add File: src/app.py\n" + "\n".join(f"+{line}" for line in body_lines) + "\n*** End Patch"
    started = "Chunk ID: 4f2a\nWall time: 1.0 seconds\nProcess running with session ID 7\nOutput:\n"
    polled = "Process exited with code 0\nOutput:\n" + "\n".join(body_lines)
    calls = [("apply_patch", {"input": patch}, "Success. Updated the following files:\nA src/app.py"),
             ("exec_command", {"cmd": "sed -n '1,60p' src/app.py"}, started),
             ("write_stdin", {"session_id": 7, "chars": ""}, polled)]
    out, _ = run_stage(openai(calls), supersede_inputs.STAGE, OPEN)
    sent = json.loads(out.body["messages"][1]["tool_calls"][0]["function"]["arguments"])["input"]
    assert sent != patch and "the file was re-read" in sent
    unpolled = openai([*calls[:2], ("write_stdin", {"session_id": 8, "chars": ""}, polled)])  # polls another session
    out, _ = run_stage(unpolled, supersede_inputs.STAGE, OPEN)
    assert json.loads(out.body["messages"][1]["tool_calls"][0]["function"]["arguments"])["input"] == patch
