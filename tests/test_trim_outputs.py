"""trim_outputs: per-kind trimming, stale reads, images and base64, markers, properties."""

from __future__ import annotations

import base64

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers
from compress.config import options_as
from compress.formats.requests import from_provider
from compress.stagekit.output_cut import TrimOptions
from compress.stages import trim_outputs
from compress.stages.trim_outputs import stale_reads
from compress.vocab.signals.errors import is_error_line
from compress.vocab.tools import PROTECTED_TOOLS
from tests.stagekit import UNCHANGED_POINTER, anthropic, assert_markers_resolve, config, openai, result_texts, run_stage

CUT_FRESH = {"keep_fresh_reads": False}
"""Fresh source reads are cut too: how the budgets shape a read."""
NOMINAL = config(stage_options={"trim_outputs": {"tier_scale": {}, **CUT_FRESH}})
"""Budgets as configured, unscaled: what the per-kind selectors keep at scale 1."""


def numbered(lines: list[str]) -> str:
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(lines, 1))


def python_file(n_funcs: int = 60) -> list[str]:
    lines = ["import os", "from pathlib import Path", ""]
    for f in range(n_funcs):
        lines += [f"def function_{f}(x):", f"    value = x * {f}  # compute", "    total = value + 1",
                  "    return total", ""]
    return lines


def test_file_read_keeps_numbers_definitions_head_and_tail():
    text = numbered(python_file())
    body = anthropic([("Read", {"file_path": "/src/app.py"}, text)])
    result, store = run_stage(body, trim_outputs.STAGE, NOMINAL)
    after = result_texts(result.body)[0]
    assert len(after) < 0.6 * len(text)
    kept = [line for line in after.split("\n") if not line.startswith("[ctxmill:")]
    assert all(line in text.split("\n") for line in kept)  # verbatim, numbers and indentation intact
    numbers = [int(line.split("\t")[0]) for line in kept]
    assert numbers == sorted(numbers) and numbers[0] == 1 and numbers[-1] == len(text.split("\n"))
    assert sum("\tdef function_" in line for line in kept) >= 20
    assert assert_markers_resolve(after, text, store) == 1
    assert "kept" in find_markers(after)[0].summary


def test_command_output_keeps_every_error_block_and_the_tail():
    lines = [f"collecting module {i} ... ok" for i in range(600)]
    lines[300:304] = ["Traceback (most recent call last):", '  File "app.py", line 3, in main',
                      "    run()", "ValueError: bad input"]
    lines[450] = "npm error code ELIFECYCLE"
    lines += ["===== 1 failed, 599 passed in 3.2s =====", "exit code 1"]
    text = "\n".join(lines)
    for body in (anthropic([("Bash", {"command": "pytest"}, text)]), openai([("shell", {"command": "pytest"}, text)])):
        result, store = run_stage(body, trim_outputs.STAGE)
        after = result_texts(result.body)[0]
        assert len(after) < 0.5 * len(text)
        for line in lines[300:304] + [lines[450]] + lines[-2:] + lines[:3]:
            assert line in after.split("\n")
        assert assert_markers_resolve(after, text, store) == 1


def test_search_results_grouped_by_file():
    lines = [f"src/mod{f}.py:{n}:    call_thing({n})" for f in range(40) for n in range(1, 12)]
    text = "\n".join(lines)
    body = anthropic([("Grep", {"pattern": "call_thing"}, text)])
    result, store = run_stage(body, trim_outputs.STAGE, NOMINAL)
    after = result_texts(result.body)[0]
    summary = find_markers(after)[0].summary
    assert "20 of 40 files" in summary and "20 more files" in summary
    assert "src/mod0.py:5:" in after and "src/mod0.py:6:" not in after and "src/mod25.py" not in after
    assert_markers_resolve(after, text, store)


def test_windows_search_results_and_listings_are_grouped_too():
    """Claude Code's Grep on Windows prints `C:\\repo\\mod0.go:12:text` (context lines `…-12-text`)."""
    lines = [f"C:\\repo\\src\\mod{f}.go{sep}{n}{sep}\tcallThing({n})" for f in range(40) for n in range(1, 12)
             for sep in (":" if n % 2 else "-",)]
    text = "\n".join(lines)
    result, store = run_stage(anthropic([("Grep", {"pattern": "callThing", "output_mode": "content"}, text)]),
                              trim_outputs.STAGE, NOMINAL)
    after = result_texts(result.body)[0]
    assert "20 of 40 files" in find_markers(after)[0].summary
    assert "C:\\repo\\src\\mod0.go-4-" in after and "mod0.go-6-" not in after and "mod25.go" not in after
    assert_markers_resolve(after, text, store)
    paths = "\n".join(f"C:\\repo\\pkg{d}\\module_{i}.py" for d in range(6) for i in range(60))
    result, store = run_stage(anthropic([("Glob", {"pattern": "**/*.py"}, paths)]), trim_outputs.STAGE, NOMINAL)
    after = result_texts(result.body)[0]
    assert "360 paths in 6 directories" in find_markers(after)[0].summary and "C:\\repo\\pkg3" in after
    assert_markers_resolve(after, paths, store)


def test_file_list_grouped_by_directory_with_counts():
    paths = [f"/repo/pkg{d}/module_{i}.py" for d in range(6) for i in range(60)]
    text = "\n".join(paths)
    body = anthropic([("Glob", {"pattern": "**/*.py"}, text)])
    result, store = run_stage(body, trim_outputs.STAGE, NOMINAL)
    after = result_texts(result.body)[0]
    assert "[ctxmill: 55 more in /repo/pkg3/ (60 entries)]" in after
    assert "/repo/pkg3/module_0.py" in after and "/repo/pkg3/module_7.py" not in after
    assert "360 paths in 6 directories" in find_markers(after)[0].summary
    assert_markers_resolve(after, text, store)


def test_a_fresh_source_read_stays_whole_and_keeps_more_than_the_nominal_budgets_when_cut():
    """A source-file read that is neither stale nor cold is the agent's copy of a file it may be
    working on: it stays whole. Cut anyway (`keep_fresh_reads` off), it keeps `tier_scale` times
    the configured budgets (3 at the always tier), less as pressure grows."""
    text = numbered(python_file(200))
    body = anthropic([("Read", {"file_path": "/src/app.py"}, text)])
    assert result_texts(run_stage(body, trim_outputs.STAGE)[0].body)[0] == text
    cut = {"stage_options": {"trim_outputs": CUT_FRESH}}
    always = result_texts(run_stage(body, trim_outputs.STAGE, config(**cut))[0].body)[0]
    nominal = result_texts(run_stage(body, trim_outputs.STAGE, NOMINAL)[0].body)[0]
    high = result_texts(run_stage(body, trim_outputs.STAGE, config("high", **cut))[0].body)[0]
    assert len(nominal) < len(high) < len(always) < len(text)
    assert find_markers(always) and high.split("\n")[0] == text.split("\n")[0]


def test_a_fresh_read_with_a_huge_line_is_still_cut():
    """Minified code is not copied into edits line by line: a line over `fresh_max_line_chars`
    makes a fresh read an ordinary output."""
    text = "1\t" + "x" * 300_000
    result, store = run_stage(anthropic([("Read", {"file_path": "/web/min.js"}, text)]), trim_outputs.STAGE)
    after = result_texts(result.body)[0]
    assert len(after) < 2_000 and "chars cut" in after
    assert_markers_resolve(after, text, store)


def test_image_parts_and_base64_runs_become_markers():
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40).decode()
    content = [{"type": "text", "text": "screenshot taken"},
               {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]
    blob = f"saved file, contents: data:image/png;base64,{png} done"
    body = anthropic([("browser_screenshot", {}, content), ("Bash", {"command": "cat x.b64"}, blob)])
    result, store = run_stage(body, trim_outputs.STAGE)
    first = result.body["messages"][2]["content"][0]["content"]
    assert [p["type"] for p in first] == ["text", "text"]
    marker = find_markers(first[1]["text"])[0]
    assert "image/png image" in marker.summary and png in store.get(marker.key).text
    after = result_texts(result.body)[1]
    assert png not in after and "image/png base64 blob" in after and after.startswith("saved file")
    assert_markers_resolve(after, blob, store)


def test_stale_reads_are_cut_harder():
    """A read is stale when the file is read again (the re-read shows its lines) or written whole
    later; an edit alone leaves it as it is (the agent copies the lines it replaces out of it)."""
    text = numbered(python_file(40))
    fresh = anthropic([("Read", {"file_path": "/a.py"}, text)])
    reread = anthropic([("Read", {"file_path": "/a.py"}, text), ("Read", {"file_path": "/a.py"}, text)])
    rewritten = anthropic([("Read", {"file_path": "/a.py"}, text), ("Write", {"file_path": "/a.py", "content": "x"}, "ok")])
    edited = anthropic([("Read", {"file_path": "/a.py"}, text),
                        ("Edit", {"file_path": "/a.py", "old_string": "a", "new_string": "b"}, "ok")])
    assert stale_reads(list(from_provider(reread).messages)) == {"toolu_000"}
    assert stale_reads(list(from_provider(rewritten).messages)) == {"toolu_000"}
    assert stale_reads(list(from_provider(edited).messages)) == set()
    assert stale_reads(list(from_provider(fresh).messages)) == set()
    fresh_after = result_texts(run_stage(fresh, trim_outputs.STAGE)[0].body)[0]
    stale_after = result_texts(run_stage(reread, trim_outputs.STAGE)[0].body)[0]
    edited_after = result_texts(run_stage(edited, trim_outputs.STAGE)[0].body)[0]
    assert len(stale_after) < len(fresh_after) == len(edited_after) == len(text)


def test_older_outputs_get_less_at_higher_tiers():
    text = numbered(python_file(80))
    body = anthropic([("Read", {"file_path": "/a.py"}, text)], turns_after=8)
    sizes = [len(result_texts(run_stage(body, trim_outputs.STAGE, config(tier, stage_options={"trim_outputs": CUT_FRESH}))[0].body)[0])
             for tier in ("always", "medium", "high")]
    assert sizes[0] > sizes[1] > sizes[2]


def test_small_outputs_and_protected_tools_stay():
    small = "line\n" * 60
    big = numbered(python_file())
    body = anthropic([("Bash", {"command": "ls"}, small), ("Write", {"file_path": "/x"}, big)])
    result, _ = run_stage(body, trim_outputs.STAGE)
    assert result_texts(result.body) == [small, big]


def test_a_subagent_report_stays_whole_while_fresh_and_is_cut_once_old():
    """`report_fresh_turns` (12): a Task/Agent report younger than that stays whole; an older one
    is cut like other output (head, headings, tail), its whole text in CCR; listed in
    `protected_tools`, it stays whole for good."""
    report = "\n".join(["## Findings"] + [f"- finding {i}: module_{i}.py handles request kind {i}" for i in range(2_000)]
                       + ["## Summary", "The bug is in module_7.py."])
    young = anthropic([("Task", {"prompt": "explore"}, report)], turns_after=8)
    old = anthropic([("Agent", {"prompt": "explore"}, report)], turns_after=14)
    assert result_texts(run_stage(young, trim_outputs.STAGE)[0].body)[0] == report
    result, store = run_stage(old, trim_outputs.STAGE)
    after = result_texts(result.body)[0]
    assert len(after) < len(report) / 4
    assert after.startswith("## Findings") and "## Summary" in after and after.rstrip().endswith("module_7.py.")
    assert assert_markers_resolve(after, report, store) >= 1
    shorter = config(stage_options={"trim_outputs": {"report_fresh_turns": 4}})
    assert len(result_texts(run_stage(young, trim_outputs.STAGE, shorter)[0].body)[0]) < len(report) / 4
    protected = config(protected_tools=PROTECTED_TOOLS | {"agent"})
    assert result_texts(run_stage(old, trim_outputs.STAGE, protected)[0].body)[0] == report


def test_options_change_the_limit():
    text = numbered(python_file())
    body = anthropic([("Read", {"file_path": "/src/app.py"}, text)])
    cfg = config(stage_options={"trim_outputs": {"min_chars": 10**7}})
    assert result_texts(run_stage(body, trim_outputs.STAGE, cfg)[0].body)[0] == text
    assert options_as(TrimOptions, {"head_lines": 5, "unknown": 1}).head_lines == 5


def test_idempotent():
    text = numbered(python_file())
    body = anthropic([("Read", {"file_path": "/src/app.py"}, text)])
    once, store = run_stage(body, trim_outputs.STAGE)
    twice, _ = run_stage(once.body, trim_outputs.STAGE, store=store)
    assert twice.body == once.body


def test_one_huge_line_is_cut_inside():
    text = "x" * 300_000
    body = anthropic([("Bash", {"command": "cat min.js"}, text)])
    result, store = run_stage(body, trim_outputs.STAGE)
    after = result_texts(result.body)[0]
    assert len(after) < 2_000 and "chars cut" in after
    assert_markers_resolve(after, text, store)


log_lines = st.lists(st.one_of(
    st.text(alphabet="abcdefghij klmnop0123456789=._/", max_size=60),
    st.sampled_from(["ERROR: disk full", "Traceback (most recent call last):", "  File \"a.py\", line 1",
                     "FAILED tests/test_x.py::test_y", "fatal: not a git repository", "构建失败"]),
), min_size=0, max_size=500)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log_lines, st.sampled_from(["Bash", "Read", "Grep", "Glob", "WebFetch", "mcp__x__y"]),
       st.sampled_from(["always", "medium", "high"]))
def test_property_errors_visible_never_larger_markers_resolve(lines, tool, tier):
    text = "\n".join(lines)
    body = anthropic([(tool, {"command": "make", "file_path": "/f"}, text)], turns_after=7)
    result, store = run_stage(body, trim_outputs.STAGE, config(tier))
    after = result_texts(result.body)[0]
    assert len(after) <= len(text)
    if after != text:
        assert assert_markers_resolve(after, text, store) >= 1
        if tool == "Bash":
            visible = after.split("\n")
            assert all(line in visible for line in lines if is_error_line(line))


def test_reads_of_files_that_are_not_source_code_get_less_at_the_high_tier():
    """Docs, data and logs are rarely copied into edits: at the high tier their reads are cut
    with `non_source_scale`, where a fresh read of source code stays whole. Below it, a read no
    later message shows stays whole either way (`unshown_tier`)."""
    text = numbered(python_file(80))
    source = anthropic([("Read", {"file_path": "/src/app.py"}, text)])
    log = anthropic([("Read", {"file_path": "/tmp/app.log"}, text)])
    kept_source = result_texts(run_stage(source, trim_outputs.STAGE, config("high"))[0].body)[0]
    kept_log = result_texts(run_stage(log, trim_outputs.STAGE, config("high"))[0].body)[0]
    assert len(kept_log) < len(kept_source) == len(text)
    assert result_texts(run_stage(log, trim_outputs.STAGE, config("medium"))[0].body)[0] == text
    same = result_texts(run_stage(log, trim_outputs.STAGE, config(
        "high", stage_options={"trim_outputs": {"non_source_scale": 1.0, **CUT_FRESH}}))[0].body)[0]
    cut_source = result_texts(run_stage(source, trim_outputs.STAGE, config(
        "high", stage_options={"trim_outputs": CUT_FRESH}))[0].body)[0]
    assert same.replace("/tmp/app.log", "") == cut_source.replace("/src/app.py", "") != text


def test_a_read_whose_file_is_not_changed_soon_after_gets_less_once_it_is_old():
    """`cold_since` "read": cold when at least `cold_after_turns` turns old and no change to
    its file within that many turns after the read. A later edit (soon enough) keeps a read warm."""
    text = numbered(python_file(80))
    read = ("Read", {"file_path": "/src/app.py"}, text)
    edit = ("Edit", {"file_path": "/src/app.py", "old_string": "a", "new_string": "b"}, "ok")
    other = ("Edit", {"file_path": "/src/other.py", "old_string": "a", "new_string": "b"}, "ok")
    cold = anthropic([read, other], turns_after=12)
    warm = anthropic([read, edit], turns_after=12)
    young = anthropic([read, other], turns_after=4)
    assert trim_outputs.cold_reads(list(from_provider(cold).messages), 12, 14) == {"toolu_000"}
    assert trim_outputs.cold_reads(list(from_provider(warm).messages), 12, 14) == set()
    assert trim_outputs.cold_reads(list(from_provider(young).messages), 12, 6) == set()
    assert trim_outputs.cold_reads(list(from_provider(cold).messages), 0, 14) == set()
    after_12 = config("high", stage_options={"trim_outputs": {"cold_after_turns": 12, "cold_since": "read"}})
    kept = {name: result_texts(run_stage(body, trim_outputs.STAGE, after_12)[0].body)[0]
            for name, body in (("cold", cold), ("warm", warm), ("young", young))}
    assert len(kept["cold"]) < len(kept["warm"]) == len(kept["young"]) == len(text)


def test_with_cold_since_last_change_a_read_goes_cold_once_its_file_is_left_alone():
    """`cold_since` "last_change": cold when neither the read nor a change of its file came in
    the last `cold_after_turns` turns, however soon after the read the file was changed."""
    text = numbered(python_file(80))
    read = ("Read", {"file_path": "/src/app.py"}, text)
    edit = ("Edit", {"file_path": "/src/app.py", "old_string": "a", "new_string": "b"}, "ok")
    other = ("Edit", {"file_path": "/src/other.py", "old_string": "a", "new_string": "b"}, "ok")
    edited_then_left = list(from_provider(anthropic([read, edit], turns_after=14)).messages)
    last = edited_then_left[-1].turn
    assert trim_outputs.idle_reads(edited_then_left, 12, last) == {"toolu_000"}
    assert trim_outputs.cold_reads(edited_then_left, 12, last) == set()  # "read": warm for good
    assert trim_outputs.idle_reads(edited_then_left, 12, 13) == set()  # the edit is recent
    untouched = list(from_provider(anthropic([read, other], turns_after=12)).messages)
    assert trim_outputs.idle_reads(untouched, 12, 14) == trim_outputs.cold_reads(untouched, 12, 14) == {"toolu_000"}
    assert trim_outputs.idle_reads(untouched, 0, 14) == set()
    with pytest.raises(ValueError, match="cold_since"):
        TrimOptions(cold_since="never")


def test_a_reread_the_host_answers_with_a_pointer_leaves_the_earlier_read_the_agents_copy():
    """Claude Code answers a re-read of an unchanged file with a pointer back to the earlier Read:
    that read is not stale (no newer copy stands in the request) and its file is in use again."""
    text = numbered(python_file(80))
    read = ("Read", {"file_path": "/src/app.py"}, text)
    pointer = ("Read", {"file_path": "/src/app.py"}, UNCHANGED_POINTER)
    other = ("Edit", {"file_path": "/src/other.py", "old_string": "a", "new_string": "b"}, "ok")
    pointed = anthropic([read, *[other] * 12, pointer], turns_after=6)
    reread = anthropic([read, *[other] * 12, ("Read", {"file_path": "/src/app.py"}, text)], turns_after=6)
    elsewhere = anthropic([read, *[other] * 12, ("Read", {"file_path": "/src/lib.py"}, UNCHANGED_POINTER)], turns_after=6)
    assert stale_reads(list(from_provider(pointed).messages)) == set()
    assert stale_reads(list(from_provider(reread).messages)) == {"toolu_000"}
    last = list(from_provider(pointed).messages)[-1].turn
    assert trim_outputs.idle_reads(list(from_provider(pointed).messages), 12, last) == set()
    assert trim_outputs.idle_reads(list(from_provider(elsewhere).messages), 12, last) == {"toolu_000"}
    assert result_texts(run_stage(pointed, trim_outputs.STAGE)[0].body)[0] == text
    assert len(result_texts(run_stage(reread, trim_outputs.STAGE)[0].body)[0]) < len(text)


def test_a_long_read_goes_cold_in_proportionally_fewer_turns():
    """`cold_ref_chars`: a read n > ref characters long waits `turns × ref / n` turns (at least
    3) before its file counts as left alone; a shorter one waits `turns`."""
    long_text, short_text = numbered(python_file(800)), numbered(python_file(20))
    assert len(long_text) > 10 * 3_000 and len(short_text) < 3_000
    body = anthropic([("Read", {"file_path": "/src/long.py"}, long_text), ("Read", {"file_path": "/src/short.py"}, short_text)],
                     turns_after=8)
    messages = list(from_provider(body).messages)
    anchor = messages[-1].turn
    limit = trim_outputs.cold_turns(messages, 30, 3_000)
    assert limit("toolu_000") == 3 and limit("toolu_001") == 30  # 30 x 3,000 / 92K rounds below the floor
    assert trim_outputs.cold_turns(messages, 30, 0)("toolu_000") == 30
    assert trim_outputs.idle_reads(messages, 30, anchor, ref_chars=3_000) == {"toolu_000"}
    assert trim_outputs.idle_reads(messages, 30, anchor) == set()
    assert trim_outputs.cold_reads(messages, 30, anchor, ref_chars=3_000) == {"toolu_000"}


def test_a_read_waits_by_the_size_of_the_file_it_shows_whatever_the_client_numbers_it_with():
    """`cold_ref_chars` measures the file's content: Claude Code's `     12→` prefixes, `cat -n`'s
    tab, OpenCode's `12: ` (inside its `<content>` wrapper), a read whose numbers were thinned on
    arrival and Codex's unnumbered `sed -n` output (under `exec_command`'s header) of one file
    wait as long, as the file's own size says."""
    from compress.stagekit.line_numbers import thin_line_numbers

    lines = python_file(400)
    content = "\n".join(lines)
    shapes = {
        "claude code": "\n".join(f"{n:>6}→{line}" for n, line in enumerate(lines, 1)),
        "cat -n": numbered(lines),
        "opencode": "<path>/src/a.py</path>\n<type>file</type>\n<content>\n"
                    + "\n".join(f"{n}: {line}" for n, line in enumerate(lines, 1)) + "\n\n(End of file)\n</content>",
        "thinned": thin_line_numbers(numbered(lines)).text,  # type: ignore[union-attr]
        "codex": "Command: /bin/bash -lc \"sed -n '1,2400p' src/a.py\"\nChunk ID: 1914a8\nWall time: 0.0000 seconds\n"
                 "Process exited with code 0\nOriginal token count: 5120\nOutput:\n" + content,
    }
    assert len(shapes["claude code"]) > 1.3 * len(content)
    waits = {}
    for client, text in shapes.items():
        messages = list(from_provider(anthropic([("Read", {"file_path": "/src/a.py"}, text)], turns_after=2)).messages)
        waits[client] = trim_outputs.cold_turns(messages, 30, 6_000)("toolu_000")
    assert set(waits.values()) == {round(30 * 6_000 / len(content))}, waits


def test_a_long_read_of_a_file_the_agent_already_changed_waits_the_full_turns():
    """`cold_ref_changed` False: a long read of a file some call changed before it (the agent
    works on that file, `worked_reads`) waits the full `cold_after_turns`; the same read of a file
    nothing changed yet goes cold sooner. True (the default): both go cold sooner."""
    long_text = numbered(python_file(800))
    edit = ("Edit", {"file_path": "/src/long.py", "old_string": "a", "new_string": "b"}, "ok")
    bodies = {name: anthropic([edit, ("Read", {"file_path": path}, long_text)], turns_after=8)
              for name, path in (("worked", "/src/long.py"), ("explored", "/src/other.py"))}
    worked, explored = (list(from_provider(bodies[name]).messages) for name in ("worked", "explored"))
    anchor = worked[-1].turn
    assert trim_outputs.worked_reads(*trim_outputs._reads_and_changes(worked)) == {"toolu_001"}
    assert trim_outputs.worked_reads(*trim_outputs._reads_and_changes(explored)) == set()
    for rule in (trim_outputs.idle_reads, trim_outputs.cold_reads):
        assert rule(worked, 30, anchor, 3_000, ref_changed=False) == set()
        assert rule(worked, 30, anchor, 3_000, ref_changed=True) == {"toolu_001"}
        assert rule(explored, 30, anchor, 3_000, ref_changed=False) == {"toolu_001"}
    short_wait = config("high", stage_options={"trim_outputs": {"cold_ref_chars": 3_000, "cold_ref_changed": False}})
    kept = {name: result_texts(run_stage(body, trim_outputs.STAGE, short_wait)[0].body)[1] for name, body in bodies.items()}
    assert kept["worked"] == long_text and len(kept["explored"]) < len(long_text)


@pytest.mark.parametrize("command, commits", [
    ('git commit -m "done"', True),
    ("cd /repo && git add -A && git -C /repo commit --amend --no-edit", True),
    ("bash -c 'git -c user.name=x commit -am wip'", True),
    ("git log --grep commit", False),
    ("echo git commit", False),
    ("git commit-tree HEAD^{tree}", False),
    ("git status", False),
])
def test_a_git_commit_is_told_from_commands_that_only_name_it(command, commits):
    from compress.vocab.commands import commits as runs_commit

    assert runs_commit(command) is commits


def test_reads_made_before_a_successful_git_commit_are_cold():
    """`cold_after_commit`: the agent committed, so the work its earlier reads served is done.
    A failed commit (a pre-commit hook that found problems) does not count, nor does a commit
    after the epoch's anchor, nor a read after the commit."""
    text = numbered(python_file(80))
    body = anthropic([("Read", {"file_path": "/src/app.py"}, text),
                      ("Bash", {"command": 'git add -A && git commit -m "feature"'}, "[main 1a2b3c4] feature"),
                      ("Read", {"file_path": "/src/other.py"}, text)], turns_after=2)
    messages = list(from_provider(body).messages)
    commit_turn = next(m.turn for m in messages if any(b.tool_id == "toolu_001" for b in m.blocks))
    assert trim_outputs.committed_reads(messages, messages[-1].turn) == {"toolu_000"}
    assert trim_outputs.committed_reads(messages, commit_turn - 1) == set()

    cut, whole = (result_texts(run_stage(body, trim_outputs.STAGE, config("high", stage_options={
        "trim_outputs": {"cold_after_commit": on}}))[0].body)[0] for on in (True, False))
    assert len(cut) < len(text) / 2 and whole == text

    failed = {**body, "messages": [
        {**m, "content": [{**b, "is_error": True} if b.get("tool_use_id") == "toolu_001" else b for b in m["content"]]}
        if isinstance(m["content"], list) else m for m in body["messages"]]}
    assert trim_outputs.committed_reads(list(from_provider(failed).messages), messages[-1].turn) == set()
    hook = "Process exited with code 1\nOutput:\npre-commit: ruff found 3 errors"  # Codex reports a failure so
    unflagged = {**body, "messages": [
        {**m, "content": [{**b, "content": hook} if b.get("tool_use_id") == "toolu_001" else b for b in m["content"]]}
        if isinstance(m["content"], list) else m for m in body["messages"]]}
    assert trim_outputs.committed_reads(list(from_provider(unflagged).messages), messages[-1].turn) == set()


def explore_report() -> str:
    return "\n".join(["## Findings"] + [f"- finding {i}: module_{i}.py handles request kind {i}" for i in range(2_000)]
                     + ["## Summary", "The bug is in module_7.py."])


def test_a_report_is_whole_only_while_the_agent_has_not_moved_on_to_files():
    """A subagent's report (Claude Code Agent) stays whole while it is the newest thing the agent
    works on: once a call in a later turn touches a file (reads, edits), it is cut like other
    output although it is younger than `report_fresh_turns`, its whole text in CCR."""
    report = explore_report()
    code = numbered(python_file())
    chatting = anthropic([("Agent", {"prompt": "explore"}, [{"type": "text", "text": report}])], turns_after=3)
    working = anthropic([("Agent", {"prompt": "explore"}, [{"type": "text", "text": report}]),
                         ("Read", {"file_path": "/repo/src/module_7.py"}, code)], turns_after=3)
    assert result_texts(run_stage(chatting, trim_outputs.STAGE)[0].body)[0] == report
    result, store = run_stage(working, trim_outputs.STAGE)
    after, read = result_texts(result.body)
    assert len(after) < len(report) / 4 and after.startswith("## Findings") and "## Summary" in after
    assert assert_markers_resolve(after, report, store) >= 1
    assert read == code


def test_a_docs_read_is_cut_at_the_high_tier_once_it_is_history_whether_or_not_the_agent_moved_on():
    """A read of a docs file (.md, .txt) is not kept whole while newest (measured dearer, no needed
    line kept more): at the high tier, once history, it is cut with `non_source_scale`, the
    original in CCR, alone or followed by other reads; below it, the agent's only copy of those
    lines stays whole. Claude Code Read, Codex exec_command `sed -n`, OpenCode read."""
    doc = "\n".join(f"{i}\tThe API accepts option_{i} and returns a paginated list of records." for i in range(1, 400))
    code = numbered(python_file())
    shapes = [
        ("Read", {"file_path": "/repo/docs/API.md"}, ("Read", {"file_path": "/repo/src/app.py"})),
        ("exec_command", {"cmd": "sed -n '1,400p' docs/API.md"}, ("exec_command", {"cmd": "sed -n '1,400p' src/app.py"})),
        ("read", {"filePath": "/repo/docs/API.md"}, ("read", {"filePath": "/repo/src/app.py"})),
    ]
    for name, doc_input, (other, other_input) in shapes:
        make = anthropic if name == "Read" else openai
        for body in (make([(name, doc_input, doc)], turns_after=3),
                     make([(name, doc_input, doc), (other, other_input, code)], turns_after=3)):
            result, store = run_stage(body, trim_outputs.STAGE, config("high"))
            after = result_texts(result.body)[0]
            assert len(after) < len(doc) / 3, name
            assert result_texts(run_stage(body, trim_outputs.STAGE, config("medium"))[0].body)[0] == doc, name
            assert assert_markers_resolve(after, doc, store) >= 1


CALLS = st.sampled_from([("Agent", {"prompt": "explore"}), ("Read", {"file_path": "/repo/README.md"}),
                         ("Read", {"file_path": "/repo/docs/guide.txt"}), ("Read", {"file_path": "/repo/src/a.py"}),
                         ("Edit", {"file_path": "/repo/README.md", "old_string": "a", "new_string": "b"}),
                         ("TodoWrite", {"todos": []})])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(CALLS, min_size=1, max_size=8), st.integers(min_value=0, max_value=8))
def test_moving_on_is_for_good_and_only_from_reports(calls, cut):
    """Whatever follows, a report the agent has moved on from stays moved on (so a later epoch
    re-decides it as the earlier one did), and nothing else is ever moved on from."""
    messages = from_provider(anthropic([(name, args, "x") for name, args in calls], turns_after=0)).messages
    uses = {b.tool_id: (b.tool_name, b.input) for m in messages for b in m.blocks if b.kind == "tool_use"}
    whole = trim_outputs.moved_on(list(messages))
    earlier = trim_outputs.moved_on(list(messages[: 1 + 2 * min(cut, len(calls))]))
    assert earlier <= whole
    assert all(uses[t][0] == "Agent" for t in whole)
    follows_reads = any(name == "Agent" and any(n in ("Read", "Edit") for n, _ in calls[k + 1:]) for k, (name, _) in enumerate(calls))
    assert bool(whole) == follows_reads
