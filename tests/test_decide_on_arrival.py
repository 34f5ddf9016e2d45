"""decide_on_arrival: long command / search / listing output and reads of data files are cut in
the request that first carries them, protected tail included, and render the same bytes in every
later request."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers, format_marker
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.runner.pipeline import run
from compress.stagekit.stage import is_compressed
from compress.stages import decide_on_arrival
from compress.state.session import Session
from compress.tiers import TierThresholds
from tests.stagekit import anthropic, assert_markers_resolve, echoed, openai, result_texts, run_stage

DEFAULT = CompressConfig()
"""The default protected tail: the newest turns are in it."""


def build_log(lines: int, error_at: int | None = None) -> str:
    out = [f"[{i:04d}] compiling module_{i} ... ok" for i in range(lines)]
    if error_at is not None:
        out[error_at] = f"error: undefined symbol frobnicate in module_{error_at}"
    return "\n".join(out)


def test_a_long_command_output_is_cut_when_it_arrives_inside_the_protected_tail():
    log = build_log(400, error_at=200)
    body = anthropic([("Bash", {"command": "make"}, log)], turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    after = result_texts(result.body)[0]
    assert len(after) < len(log) / 3
    assert "error: undefined symbol frobnicate in module_200" in after
    assert after.startswith("[0000]") and after.rstrip().endswith("[0399] compiling module_399 ... ok")
    assert "kept" in find_markers(after)[0].summary
    assert_markers_resolve(after, log, store)


def test_unnumbered_reads_json_short_and_protected_outputs_are_left_for_later():
    lines = "\n".join(f"line {i} of the source" for i in range(400))
    json_rows = "[" + ",".join(f'{{"id": {i}, "name": "row {i}"}}' for i in range(300)) + "]"
    body = anthropic([("Read", {"file_path": "/src/a.py"}, lines), ("Bash", {"command": "gh api x"}, json_rows),
                      ("Bash", {"command": "ls"}, build_log(10)), ("Task", {"prompt": "go"}, build_log(400))],
                     turns_after=0)
    result, _ = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    assert result.body == body


def test_a_read_of_a_data_file_or_log_is_cut_when_it_arrives_and_a_source_read_is_not():
    record = '{"type": "assistant", "message": {"content": [{"type": "text", "text": "%s"}]}, "id": %d}'
    rows = numbered([record % ("x" * 300, i) for i in range(60)])
    code = numbered([f"    value_{i} = compute({i})" for i in range(60)])
    body = anthropic([("Read", {"file_path": "/repo/fixtures/session.jsonl"}, rows),
                      ("Read", {"file_path": "/repo/build.log"}, numbered(build_log(300, error_at=150).split("\n"))),
                      ("Read", {"file_path": "/repo/src/app.py"}, code)], turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    jsonl, log, source = result_texts(result.body)
    assert len(jsonl) < len(rows) / 3 and '"id": 0}' in jsonl and '"id": 59}' in jsonl
    assert "kept" in find_markers(jsonl)[0].summary
    assert "error: undefined symbol frobnicate in module_150" in log and len(log) < 10_000
    assert find_markers(source)[0].summary.startswith("line numbers shown on")  # thinned, every line kept
    assert all(f"value_{i} = compute({i})" in source for i in range(60))
    for before, after in zip(result_texts(body), (jsonl, log)):
        assert_markers_resolve(after, before, store)


def test_a_read_of_the_output_a_host_saved_to_a_file_is_cut_when_it_arrives():
    """Claude Code answers an output too long to show with the path it saved it to; the agent's
    read of that file is the command's output, cut like it."""
    log = build_log(300, error_at=150)
    saved = "/home/u/.claude/projects/-home-u-repo/8463c716/tool-results/toolu_019Cp.txt"
    body = anthropic([("Read", {"file_path": saved}, numbered(log.split("\n")))], turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    after = result_texts(result.body)[0]
    assert "error: undefined symbol frobnicate in module_150" in after and len(after) < 10_000
    assert_markers_resolve(after, result_texts(body)[0], store)


def numbered(lines: list[str], start: int = 1) -> str:
    """A file read as Claude Code numbers it."""
    return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(lines, start))


def test_a_numbered_read_keeps_every_line_and_every_tenth_number_when_it_arrives():
    source = [f"    value_{i} = compute(value_{i - 1}, {i})" for i in range(1, 301)]
    text = numbered(source, start=41)
    body = anthropic([("Read", {"file_path": "/src/a.py", "offset": 41}, text)], turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    after = result_texts(result.body)[0]
    marker, *lines = after.split("\n")
    assert find_markers(marker)[0].summary == (
        "line numbers shown on line 41 and every 10th line up to 340; line text unchanged")
    assert len(lines) == len(source)
    for n, (line, content) in enumerate(zip(lines, source), 41):
        assert line == (f"{n:>6}→{content}" if n == 41 or n % 10 == 0 else content)
    assert_markers_resolve(after, text, store)
    assert not is_compressed(after), "trim_outputs may still cut a thinned read"


def _session_bodies(outputs: list[str]) -> list[dict]:
    """Request k of a session whose k-th turn ran a command with outputs[k]."""
    calls = [("Bash", {"command": f"step {k}"}, text) for k, text in enumerate(outputs)]
    return [anthropic(calls[:k + 1], turns_after=0) for k in range(len(calls))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(0, 300), min_size=2, max_size=6),
       tier_change_at=st.integers(0, 6))
def test_an_arrival_decision_renders_the_same_bytes_in_every_later_request(sizes, tier_change_at):
    """Incremental runs and epochs (a tier change forces one) re-make the decision with the same
    bytes, so the provider's cached prefix holding it stays valid."""
    outputs = [build_log(n, error_at=n // 2 if n > 10 else None) for n in sizes]
    session, store = Session.memory(), CCRStore.in_memory()
    low = CompressConfig()
    high = CompressConfig(tiers=TierThresholds(1, 1))
    first_seen: dict[int, dict] = {}
    for k, body in enumerate(_session_bodies(outputs)):
        config = high if k >= tier_change_at else low
        out = run(body, session=session, store=store, config=config).body["messages"]
        for j in range(2, len(out), 2):  # the tool_result messages
            first_seen.setdefault(j, out[j])
            assert out[j] == first_seen[j]
    for j, message in first_seen.items():
        text = result_texts({"messages": [message]})[0]
        assert_markers_resolve(text, outputs[j // 2 - 1], store)


def test_the_guard_lets_an_arrival_stage_change_tool_results_only():
    """A stage that decides on arrival may reach into the protected tail, but the guard drops
    it when it touches anything but a tool result (here: the newest assistant text)."""
    from compress.model import TEXT
    from compress.runner.pipeline import Chain
    from compress.stagekit.stage import Stage

    def rewrite_assistant_text(messages, ctx):
        return [m.with_blocks([b.with_text("rewritten") if b.kind == TEXT else b for b in m.blocks])
                if m.role == "assistant" else m for m in messages]

    body = anthropic([("Bash", {"command": "make"}, build_log(400))], turns_after=1)
    result = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=DEFAULT,
                 chain=Chain(()).push(Stage("rewriter", rewrite_assistant_text, decides_on_arrival=True)))
    assert result.body is body
    assert "changed more than tool results" in result.report.errors[0]
    cut = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=DEFAULT,
              chain=Chain(()).push(decide_on_arrival.STAGE))
    assert cut.body != body and not cut.report.errors


def test_a_thinned_read_cut_later_names_the_whole_read_and_is_stored_once():
    """trim_outputs cutting a thinned read points at the read the thinning stored (numbers and
    all) instead of storing the thinned text again."""
    text = numbered([f"    step_{i}(state, {i})" for i in range(1, 801)])
    call = [("Read", {"file_path": "/src/a.py"}, text)]
    session, store = Session.memory(), CCRStore.in_memory()
    config = replace(DEFAULT, epoch_savings_threshold=1_000, stage_options={"trim_outputs": {"keep_fresh_reads": False}})
    first = run(anthropic(call, turns_after=0), session=session, store=store, config=config)
    thinned = result_texts(first.body)[0]
    (whole,) = find_markers(thinned)
    later = run(anthropic(call, turns_after=12), session=session, store=store, config=config)
    after = result_texts(later.body)[0]
    assert later.report.mode == "epoch" and len(after) < len(thinned) / 3
    assert "kept" in find_markers(after)[-1].summary
    assert {m.key for m in find_markers(after)} == {whole.key}
    assert store.stats().entries == 1, "the thinned text is not stored beside the whole read"
    assert_markers_resolve(after, text, store)


def test_only_a_cutting_marker_makes_a_result_compressed():
    thin = format_marker("line numbers shown on line 1 and every 10th line up to 300; line text unchanged", "a" * 32)
    cut = format_marker("kept 80 of 300 lines (head 40, tail 40)", "b" * 32)
    assert not is_compressed(f"{thin}\nbody") and not is_compressed("see ctxmill: docs")
    assert is_compressed(f"{thin}\nbody\n{cut}") and is_compressed(f"{cut}\nctxmill: mentioned")


def test_the_text_editor_tools_view_is_a_file_read_and_its_edits_stay_protected():
    """Anthropic's text editor tool is protected for what it changes; its `view` answers with
    the file, which is a read like any other (numbers thinned on arrival, cut later), not a
    protected result."""
    source = [f"    value_{i} = compute(value_{i - 1}, {i})" for i in range(1, 301)]
    text = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(source, 1))
    editor = "str_replace_based_edit_tool"
    body = anthropic([(editor, {"command": "view", "path": "/src/a.py"}, text),
                      (editor, {"command": "str_replace", "path": "/src/a.py", "old_str": "x", "new_str": "y"}, text)],
                     turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    viewed, edited = result_texts(result.body)
    assert find_markers(viewed)[0].summary.startswith("line numbers shown on line 1 and every 10th line")
    assert viewed.split("\n")[1:] == [f"{n:>6}\t{line}" if n == 1 or n % 10 == 0 else line
                                      for n, line in enumerate(source, 1)]
    assert_markers_resolve(viewed, text, store)
    assert edited == text


def test_a_tool_the_user_protects_stays_protected_even_when_it_reads():
    from compress.vocab.tools import PROTECTED_TOOLS, is_protected_tool

    view = {"command": "view", "path": "/src/a.py"}
    assert not is_protected_tool("str_replace_based_edit_tool", PROTECTED_TOOLS, view)
    assert is_protected_tool("str_replace_based_edit_tool", PROTECTED_TOOLS, {**view, "command": "insert"})
    assert is_protected_tool("Read", PROTECTED_TOOLS | {"read"}, {"file_path": "/src/a.py"})


def test_a_whole_file_writes_echo_is_cut_on_arrival_and_its_body_stays_in_the_call():
    """Claude Code up to 2.1.39 answers a Write with the whole file, numbered: a second copy of
    the body. The echo is tool output like any other; the body, which later edits copy from,
    stays whole. A user who protects `write` keeps the echo, and then the body is the copy that
    becomes a note (supersede_inputs: history at birth)."""
    from compress.vocab.tools import PROTECTED_TOOLS

    content = "\n".join(f"def handler_{i}(request): return respond({i})" for i in range(200))
    echo = ("The file /src/app.py has been updated. Here's the result of running `cat -n` on a snippet "
            "of the edited file:\n" + numbered(content.split("\n")))
    body = anthropic([("Write", {"file_path": "/src/app.py", "content": content}, echo)], turns_after=0)

    def written(out: dict) -> str:
        return next(b for m in out["messages"] if isinstance(m["content"], list)
                    for b in m["content"] if b["type"] == "tool_use")["input"]["content"]

    store = CCRStore.in_memory()
    out = run(body, session=Session.memory(), store=store, config=DEFAULT).body
    assert written(out) == content
    cut = result_texts(out)[0]
    first, marker = cut.split("\n")
    assert first == echo.split("\n")[0]
    assert find_markers(marker)[0].summary == "200 lines showed the written text again, line for line, as in this call"
    assert_markers_resolve(cut, echo, store)
    changed = echo.replace("respond(7)", "respond(8)")  # not the body's lines: ordinary output
    other = anthropic([("Write", {"file_path": "/src/app.py", "content": content}, changed)], turns_after=0)
    assert "line for line" not in result_texts(run(other, session=Session.memory(), store=store, config=DEFAULT).body)[0]

    protected = replace(DEFAULT, protected_tools=PROTECTED_TOOLS | {"write"})
    kept = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=protected).body
    assert result_texts(kept)[0] == echo
    assert find_markers(written(kept))


@given(st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=60),
                min_size=5, max_size=80), st.integers(0, 2))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_write_result_loses_exactly_the_echo_of_its_body(lines, change):
    """Cut when the result shows the body's lines in a row (and that saves enough: always for a
    body over 1,000 characters): the lines before and after the echo stay as they were, the
    marker resolves to the whole result. Otherwise no echo marker."""
    content = "\n".join(lines)
    shown = echoed(lines, change)
    preamble, after = "The file /src/a.py has been updated. Here's the result:", "(end of snippet)"
    echo = "\n".join([preamble, *(f"{n:>6}→{line}" for n, line in enumerate(shown, 1)), after])
    body = anthropic([("Write", {"file_path": "/src/a.py", "content": content}, echo)], turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    out = result_texts(result.body)[0]
    markers = [m for m in find_markers(out) if "line for line" in m.summary]
    in_a_row = f"\n{content.rstrip(chr(10))}\n" in "\n" + "\n".join(shown) + "\n" and any(s.strip() for s in lines)
    if markers:
        assert in_a_row
        assert out.split("\n")[0] == preamble and out.split("\n")[-1] == after
        assert_markers_resolve(out, echo, store)
    else:
        assert not (in_a_row and len(content) > 1_000), "a long echo of the body was kept"


def test_a_result_carrying_a_ctxmill_marker_was_decided_before_and_is_left_alone():
    """Idempotence: an earlier pass removed a reminder between two lines the call's input also
    holds; a second pass must not now find them as an echo and cut them (nor cut anything else
    of a result a ctxmill marker shows was already decided)."""
    a, b = "first line of the file shown here " * 8, "second line of the file shown here " * 8
    reminder = "<system-reminder>" + "Remember the todo list. " * 10 + "</system-reminder>"
    body = anthropic([("Grep", {"pattern": "line", "content": f"{a}\n\n{b}"}, f"{a}\n{reminder}\n{b}")], turns_after=1)
    config = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1, min_saving_chars=20)
    once = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=config).body
    assert "removed injected system-reminder" in result_texts(once)[0]
    again = run(once, session=Session.memory(), store=CCRStore.in_memory(), config=config)
    assert result_texts(again.body) == result_texts(once) and again.report.ccr_written == 0


def test_base64_inside_a_json_result_is_cut_on_arrival_and_the_json_stays_json():
    """An MCP screenshot tool answers with JSON holding the image as base64 (80K+ characters):
    the run is cut when it arrives, the original in CCR; the rest of the JSON is left for crush_json.
    As a JSON content array it is unwrapped: its text first, the image part's JSON on its own line."""
    import base64
    import json

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 240).decode()
    document = json.dumps({"title": "Screenshot of the page", "screenshot": {"data": png, "mimeType": "image/png"}})
    payload = json.dumps([{"type": "text", "text": "Screenshot of the page"}, {"type": "image", "data": png,
                                                                              "mimeType": "image/png"}])
    for original in (document, payload):
        body = anthropic([("mcp__playwright__browser_take_screenshot", {}, original)], turns_after=0)
        result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
        after = result_texts(result.body)[0]
        assert len(after) < 1_000 and "Screenshot of the page" in after and "image/png" in after and png not in after
        assert_markers_resolve(after, original, store)
        if original is document:
            assert json.loads(after.rsplit("\n", 1)[0])["screenshot"]["mimeType"] == "image/png"
        else:
            assert find_markers(after)[0].summary == "the text of a JSON content array, unwrapped"
            assert json.loads(after.split("\n")[2])["mimeType"] == "image/png"


def test_web_output_is_cut_on_arrival_like_other_long_output_and_a_subagent_report_is_not():
    page = "\n".join(f"Paragraph {i}: the documentation explains option {i} at length, with examples." for i in range(400))
    report = "\n".join(f"Finding {i}: module_{i} calls frobnicate() twice" for i in range(400))
    body = anthropic([("WebFetch", {"url": "https://example.com/docs"}, page), ("Task", {"prompt": "go"}, report)],
                     turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    fetched, kept = result_texts(result.body)
    assert len(fetched) < len(page) / 3 and fetched.startswith("Paragraph 0:")
    assert_markers_resolve(fetched, page, store)
    assert kept == report


REPORTS = replace(DEFAULT, stage_options={"decide_on_arrival": {"reports": True}})
"""Subagents' reports decided on arrival (`ArrivalOptions.reports`)."""


def subagent_report(findings: int) -> str:
    """A subagent's long report as agents write them: headings, findings, a closing line."""
    lines = ["## Exploration report", ""]
    for i in range(findings):
        if i % 50 == 0:
            lines += [f"### Area {i // 50}", ""]
        lines.append(f"- Finding {i}: src/module_{i}.rs calls frobnicate() twice on the request path")
    return "\n".join([*lines, "", "All paths above were read; nothing was changed."])


def test_with_reports_a_claude_code_agent_report_is_cut_when_it_arrives_its_original_in_ccr():
    """Claude Code's Agent (and Task) result: a list of text parts. With `reports`, the report is
    cut in the request that first carries it (protected tail included) like web output: head,
    headings and tail kept, the whole report in CCR behind an honest marker; a short one stays."""
    report = subagent_report(400)
    short = "## Report\n- one finding"
    body = anthropic([("Agent", {"description": "explore", "prompt": "map the repo", "subagent_type": "Explore"},
                       [{"type": "text", "text": report}]),
                      ("Task", {"prompt": "check"}, [{"type": "text", "text": short}])], turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, REPORTS)
    cut, kept = result_texts(result.body)
    assert len(cut) < len(report) / 3
    assert "## Exploration report" in cut and "### Area 3" in cut
    assert cut.rstrip().endswith("All paths above were read; nothing was changed.")
    assert "kept" in find_markers(cut)[0].summary
    assert assert_markers_resolve(cut, report, store) == 1
    assert kept == short


def test_with_reports_an_opencode_task_report_is_cut_on_arrival_and_renders_the_same_bytes_again():
    """OpenCode's `task` tool (OpenAI Chat shape, the report inside <task_result>): cut on
    arrival; deciding the decided request again changes nothing (an epoch renders the same bytes)."""
    report = "task_id: ses_01fe (for resuming)\n\n<task_result>\n" + subagent_report(300) + "\n</task_result>"
    body = openai([("task", {"description": "explore", "prompt": "map the repo", "subagent_type": "explore"}, report)],
                  turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, REPORTS)
    cut = result_texts(result.body)[0]
    assert len(cut) < len(report) / 3 and cut.startswith("task_id: ses_01fe")
    assert cut.rstrip().endswith("</task_result>")
    assert_markers_resolve(cut, report, store)
    again, _ = run_stage(result.body, decide_on_arrival.STAGE, REPORTS, store)
    assert again.body == result.body


def test_by_default_a_report_is_left_for_trim_outputs():
    """`reports` is off by default: the report stays whole on arrival (trim_outputs decides it
    once it is history, `report_fresh_turns`)."""
    report = subagent_report(400)
    body = anthropic([("Agent", {"prompt": "map the repo"}, [{"type": "text", "text": report}])], turns_after=0)
    result, _ = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    assert result_texts(result.body) == [report]


def test_a_shell_command_that_prints_a_file_beside_a_listing_is_a_read_kept_whole_on_arrival():
    """Sarthib7 FundWise's shape: the agent copied package.json lines out of it 38 messages later."""
    package = "\n".join(['{', '  "scripts": {', '    "test": "vitest run",'] + [f'    "dep-{i}": "^1.{i}.0",' for i in range(80)])
    shown = "zerion-readiness.mjs\nseed.ts\n---PACKAGE---\n" + package
    command = 'ls /r/scripts/ 2>&1 | head -20 && echo "---PACKAGE---" && head -50 /r/package.json'
    body = anthropic([("Bash", {"command": command}, shown), ("Bash", {"command": f"{command} && npm run build"}, shown)],
                     turns_after=0)
    read, built = result_texts(run_stage(body, decide_on_arrival.STAGE, DEFAULT)[0].body)
    assert len(shown) > 2_000 and read == shown
    assert '"test": "vitest run",' in read and len(built) < len(shown)
