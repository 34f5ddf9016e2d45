"""Codex's code mode: an `exec` program read as the tool calls it makes (compress.vocab.codemode)."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.model import TOOL_RESULT, Block
from compress.runner.pipeline import run
from compress.state.session import Session
from compress.vocab.calls import copied_texts, first_path, rerun_hint, touched_files, written_texts
from compress.vocab.codemode import UNKNOWN_PART, nested_calls
from compress.vocab.signals.errors import is_failed_result
from compress.vocab.tools import ToolKind, tool_kind
from compress.vocab.touches import EDIT, READ, FileTouch

PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch"
READ_PROGRAM = "const r = await tools.exec_command({cmd: \"sed -n '1,200p' src/app.ts\", workdir: '/repo'});\ntext(r.output);"


def exec_call(program: str) -> dict:
    return {"input": program}  # a Responses custom_tool_call's input, as the canonical model holds it


def test_literal_arguments_are_read_and_what_only_running_tells_is_not():
    program = (
        "// @exec: {\"yield_time_ms\": 10000}\n"
        f"const patch = `{PATCH}`;\n"
        f"{READ_PROGRAM}\n"
        "for (const f of ['a.ts', 'b.ts']) text((await tools.exec_command({cmd: `cat ${f}`})).output);\n"
        "await tools.apply_patch(patch);\n"
        "await tools.write_stdin({session_id: 3, chars: 'q\\n', yield_time_ms: 250});\n"
        "await tools[name]('x');  // not a call this reading can name\n")
    assert nested_calls(exec_call(program)) == (
        ("exec_command", {"cmd": "sed -n '1,200p' src/app.ts", "workdir": "/repo"}),
        ("exec_command", {"cmd": f"cat {UNKNOWN_PART}"}),
        ("apply_patch", PATCH),
        ("write_stdin", {"session_id": 3, "chars": "q\n", "yield_time_ms": 250}),
    )
    assert nested_calls(program) == nested_calls(exec_call(program))  # raw freeform text too
    assert nested_calls(exec_call("text(1 + 1)")) == ()
    assert nested_calls({"cmd": "tools.x()"}) == () and nested_calls(None) == ()


def test_an_exec_program_has_the_kind_and_files_of_the_calls_it_makes():
    reads_and_patches = exec_call(f"{READ_PROGRAM}\nawait tools.apply_patch(`{PATCH}`);")
    assert tool_kind("exec", reads_and_patches) is ToolKind.FILE_READ
    assert touched_files("exec", reads_and_patches) == [FileTouch("/repo/src/app.ts", READ), FileTouch("src/app.py", EDIT)]
    assert first_path("exec", reads_and_patches) == "/repo/src/app.ts"
    assert copied_texts("exec", reads_and_patches) == ["def add(a, b):\n    return a - b"]
    assert written_texts("exec", reads_and_patches) == written_texts("apply_patch", PATCH)
    assert rerun_hint("exec", reads_and_patches) == "re-run the tool call `sed -n '1,200p' src/app.ts`"
    assert tool_kind("exec", exec_call("text((await tools.exec_command({cmd: 'npm test'})).output)")) is ToolKind.COMMAND
    assert tool_kind("exec", exec_call("const r = await tools.exec_command({cmd: `rg -n ${q} src`})")) is ToolKind.SEARCH
    # a read whose file only running the program names is still a read, of no file ctxmill can name
    unnamed = exec_call("await tools.exec_command({cmd: `cat ${f}`})")
    assert tool_kind("exec", unnamed) is ToolKind.FILE_READ and touched_files("exec", unnamed) == []
    assert tool_kind("exec", exec_call("text(42)")) is ToolKind.OTHER
    assert tool_kind("exec", {"command": "ls"}) is ToolKind.OTHER  # another host's `exec` is no program


def responses_body(program: str, output: str) -> dict:
    return {"model": "gpt-6.2-sol", "store": False, "input": [
        {"type": "additional_tools", "role": "developer", "tools": [{"type": "namespace", "name": "functions", "tools": [
            {"type": "custom", "name": "exec", "description": "Run JavaScript code"}]}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the build."}]},
        {"type": "custom_tool_call", "call_id": "call_1", "name": "exec", "input": program, "status": "completed"},
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"},
            {"type": "input_text", "text": output}]}]}


def test_a_program_that_reads_a_file_reaches_the_model_whole_and_a_build_log_is_cut_on_arrival():
    source = "\n".join(f"export function helper{i}(x: number): number {{ return x * {i} + 1; }}" for i in range(300))
    log = "\n".join(f"[build] compiling module_{i}.ts ... ok" for i in range(400)) + "\nerror TS2322: bad type\nBUILD FAILED"
    read = responses_body(READ_PROGRAM, source)
    build = responses_body("const r = await tools.exec_command({cmd: 'npm run build'});\ntext(r.output);", log)
    for body, whole in ((read, True), (build, False)):
        out = run(copy.deepcopy(body), session=Session.memory(), store=CCRStore.in_memory()).body
        assert out["input"][:3] == body["input"][:3]  # tools item, prompt and the call itself unchanged
        sent = out["input"][3]["output"][-1]["text"]
        assert (sent == body["input"][3]["output"][-1]["text"]) is whole
        if not whole:
            assert "BUILD FAILED" in sent and "error TS2322" in sent and "deep_expand(" in sent


def test_a_program_that_threw_is_a_failed_call():
    def result(text: str) -> Block:
        return Block(TOOL_RESULT, raw={}, tool_id="call_1", parts=(Block("text", raw={}, text=text),))

    assert is_failed_result(result("Script error:\nTypeError: tools.exec_comand is not a function\nWall time: 0.0 seconds"))
    assert not is_failed_result(result("Script completed\nWall time 0.1 seconds\nOutput:\nBUILD OK"))
    assert not is_failed_result(result("\r\nSCRIPT ERROR: Parse Error: Identifier not declared\r\n---- exit: 0 ----"))  # Godot


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("tools.exec_command({cmd:'`${}x\\\"\n;)]/*")) | st.characters(), max_size=300))
def test_any_text_is_read_without_raising_and_the_same_way_twice(program):
    first = nested_calls(exec_call(program))
    assert first == nested_calls(exec_call(program))
    assert all(isinstance(name, str) for name, _ in first)
    tool_kind("exec", exec_call(program))
    touched_files("exec", exec_call(program))


def test_the_bench_rewrites_a_codex_session_into_programs_that_make_the_same_calls():
    """bench/codex_code_mode.py measures code mode on the corpus's Codex sessions: each call it
    rewrites must read back as the call it was."""
    from bench.codex_code_mode import HEADER, as_code_mode
    from compress.formats.requests import SHAPES

    items = [{"type": "function_call", "name": "exec_command", "call_id": "c1",
              "arguments": '{"cmd": "sed -n \'1,80p\' src/app.ts", "workdir": "/repo"}'},
             {"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 0\nOutput:\nx"},
             {"type": "function_call", "name": "shell_command", "call_id": "c3", "arguments": json.dumps(
                 {"command": "cat > src/a.sh <<'EOF'\necho \"${HOME}\" `pwd` \\\nEOF", "timeout_ms": 1000})},
             {"type": "function_call_output", "call_id": "c3", "output": "ok"},
             {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2", "input": PATCH},
             {"type": "custom_tool_call_output", "call_id": "c2", "output": "Success"}]
    parse = SHAPES["openai-responses"].parse_message

    def calls(raw_items):
        return [(b.tool_name, b.input) for it in raw_items for b in parse(it).blocks if b.kind == "tool_use"]

    for (name, before), (program, after) in zip(calls(items), calls(as_code_mode(items))):
        assert program == "exec"
        assert tool_kind(program, after) is tool_kind(name, before)
        assert touched_files(program, after) == touched_files(name, before)
        assert copied_texts(program, after) == copied_texts(name, before)
        assert written_texts(program, after) == written_texts(name, before)
    assert as_code_mode(items)[1]["output"] == HEADER + items[1]["output"]
