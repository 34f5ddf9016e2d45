"""bench/oracle_reads.py's sides that know the future: ctxmill's final renderings applied from
arrival (hindsight), with and without the lines later edits copy."""

from __future__ import annotations

import json

from bench.oracle_reads import final_blocks, hindsight_for
from compress.formats.requests import SHAPES
from compress.formats.sessions import read_text
from compress.model import TOOL_RESULT
from replay.runner import replay

SOURCE = "\n".join(f"    def handler_number_{i}(self, value):" for i in range(200))
COPIED = "def handler_number_100(self, value):"


def _session() -> list[dict]:
    read = [{"role": "assistant", "content": [{"type": "tool_use", "id": "r1", "name": "Read",
                                               "input": {"file_path": "a.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r1", "content": SOURCE}]}]
    edit = {"role": "assistant", "content": [{"type": "tool_use", "id": "e1", "name": "Edit", "input": {
        "file_path": "a.py", "old_string": COPIED, "new_string": "def handler(self, value):"}}]}
    return [{"role": "user", "content": "edit the handler"}, *read, edit,
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "e1", "content": "ok"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]


def test_hindsight_renders_each_block_as_finally_decided_and_plus_keeps_the_copied_lines():
    transcript = read_text(json.dumps({"messages": _session()}), "request")
    shape = SHAPES[transcript.provider]
    read = shape.parse_message(transcript.messages[2]).blocks[0]
    final = {(TOOL_RESULT, "r1"): read.with_result_text("[cut to one line]")}
    plain, plus = hindsight_for(transcript, final, False), hindsight_for(transcript, final, True)
    body = transcript.whole(3)
    assert "handler_number_100" not in json.dumps(plain(body))
    assert COPIED in json.dumps(plus(body)) and "handler_number_99(" not in json.dumps(plus(body))
    assert plain(body)["messages"][1] is body["messages"][1]  # untouched messages stay as sent

    report = replay(transcript, peers={"hindsight": plain, "hindsight+copied": plus})
    sides = report.sides()
    assert sides["hindsight"].needed.fraction() == 0.0 and sides["hindsight+copied"].needed.fraction() == 1.0
    assert sides["hindsight+copied"].cost < report.raw.cost


def test_final_blocks_are_the_chains_renderings_in_the_last_request():
    """A long build log is cut on arrival; the short session's read stays whole."""
    log = "\n".join(f"compiling module {i} of 400 ... ok" for i in range(400))
    build = [{"role": "assistant", "content": [{"type": "tool_use", "id": "b1", "name": "Bash",
                                                "input": {"command": "make"}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b1", "content": log}]}]
    session = _session()
    transcript = read_text(json.dumps({"messages": session[:3] + build + session[3:]}), "request")
    final = final_blocks(transcript)
    assert {key[1] for key in final} == {"r1", "b1", "e1"}
    assert final[(TOOL_RESULT, "r1")].result_text == SOURCE
    cut = final[(TOOL_RESULT, "b1")].result_text
    assert "[ctxmill:" in cut and len(cut) < len(log) / 2


def test_told_cuts_on_arrival_only_the_reads_of_files_no_later_edit_copies_from():
    """Two reads, a.py (the edit copies a line of it) and b.py (nothing copied): only b.py's is
    unneeded, and the told chain cuts it in the very request that carries it, whole in CCR."""
    from bench.oracle_reads import told_chain, unneeded_reads
    from ccr.store import CCRStore
    from compress.runner.pipeline import run
    from compress.state.session import Session

    other = "\n".join(f"    def unrelated_helper_{i}(self, value):" for i in range(200))
    session = _session()
    second = [{"role": "assistant", "content": [{"type": "tool_use", "id": "r2", "name": "Read",
                                                 "input": {"file_path": "b.py"}}]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r2", "content": other}]}]
    transcript = read_text(json.dumps({"messages": session[:3] + second + session[3:]}), "request")
    assert unneeded_reads(transcript) == frozenset({"r2"})

    store = CCRStore.in_memory()
    sent = run(transcript.whole(5), session=Session.memory(), store=store, chain=told_chain(frozenset({"r2"}))).body["messages"]
    cut = sent[4]["content"][0]["content"]
    assert "unrelated_helper_199" in cut and "unrelated_helper_100(" not in cut and "[ctxmill:" in cut
    assert sent[2]["content"][0]["content"] == SOURCE
    assert store.get(cut.split('deep_expand("')[1].split('")')[0]).text == other
