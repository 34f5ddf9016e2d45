"""dedup_tool_calls: earlier copies of a repeated call's output become pointers to the latest."""

from __future__ import annotations

import pytest

from ccr.markers import find_markers
from compress.formats.requests import from_provider
from compress.stages.dedup_tool_calls import STAGE, canonical
from compress.state.session import Session
from tests.chain_checks import BODIES, anthropic_body, check_run, run_stages

LOG = "\n".join(f"test_{i} PASSED" for i in range(120))


def results(body: dict) -> list[str]:
    return [b.result_text for m in from_provider(body).messages for b in m.blocks if b.kind == "tool_result"]


@pytest.mark.parametrize("shape", ["anthropic", "openai"])
def test_earlier_copies_point_to_the_latest(shape):
    calls = [("Bash", {"command": "pytest -q"}, LOG), ("Read", {"file_path": "/r/a.py"}, "x = 1\n" * 80),
             ("Bash", {"command": "pytest -q"}, LOG), ("Bash", {"command": "pytest -q"}, LOG)]
    body = BODIES[shape](calls)
    out, report, store = run_stages(body, STAGE)
    first, read, second, latest = results(out)
    assert latest == LOG and read == "x = 1\n" * 80
    for pointer in (first, second):
        (marker,) = find_markers(pointer)
        assert pointer == pointer[marker.start:marker.end]
        assert marker.summary == "same output as the call at turn 4"
    assert check_run(body, out, store) == 2
    assert report.stages_saved["dedup_tool_calls"] > 0


def test_arguments_are_canonical_but_outputs_must_match():
    assert canonical({"b": [{"y": None, "x": 1}], "a": None}) == {"b": [{"x": 1}]}
    calls = [("Read", {"file_path": "/r/a.py", "limit": None}, LOG), ("Read", {"limit": None, "file_path": "/r/a.py"}, LOG),
             ("Read", {"file_path": "/r/a.py"}, LOG + "\nchanged"), ("Read", {"file_path": "/r/b.py"}, LOG + "\nchanged")]
    out, _, store = run_stages(anthropic_body(calls), STAGE)
    texts = results(out)
    assert find_markers(texts[0]) and texts[1:] == [LOG, LOG + "\nchanged", LOG + "\nchanged"]


def test_errors_do_not_dedup_with_successes_and_protected_tools_stay():
    calls = [("Bash", {"command": "make"}, LOG, True), ("Bash", {"command": "make"}, LOG, False),
             ("TodoWrite", {"todos": []}, LOG), ("TodoWrite", {"todos": []}, LOG)]
    body = anthropic_body(calls)
    out, _, _ = run_stages(body, STAGE)
    assert out is body


def test_failed_calls_stay_whole_so_later_stages_still_see_the_failure():
    """Found by hypothesis: a repeated failed Write turned into a pointer read as a successful
    rewrite, so `supersede_inputs` noted an earlier body its file still held."""
    failure = "Traceback (most recent call last):\n" + LOG
    calls = [("Bash", {"command": "make"}, failure, True), ("Bash", {"command": "make"}, failure, True),
             ("Write", {"file_path": "/r/a.py", "content": "x"}, failure), ("Write", {"file_path": "/r/a.py", "content": "x"}, failure)]
    body = anthropic_body(calls)
    assert run_stages(body, STAGE)[0] is body


def test_small_outputs_and_images_stay():
    image = [{"type": "text", "text": LOG}, {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                          "data": "iVBORw0KGgo="}}]
    calls = [("Bash", {"command": "ls"}, "a.py b.py"), ("Bash", {"command": "ls"}, "a.py b.py"),
             ("Screenshot", {}, image), ("Screenshot", {}, image)]
    body = anthropic_body(calls)
    assert run_stages(body, STAGE)[0] is body


def test_idempotent():
    body = anthropic_body([("Bash", {"command": "pytest"}, LOG)] * 3)
    once, _, store = run_stages(body, STAGE)
    twice, _, _ = run_stages(once, STAGE, store=store)
    assert twice == once


def test_frozen_copy_stays_until_the_next_epoch():
    """Incremental run: the earlier copy sits in the frozen prefix, so it stays whole."""
    session = Session.memory()
    calls = [("Bash", {"command": "pytest"}, LOG), ("Read", {"file_path": "/r/x.py"}, "y = 2\n" * 50)]
    first, _, _ = run_stages(anthropic_body(calls), STAGE, session=session)
    longer = anthropic_body(calls + [("Read", {"file_path": "/r/z.py"}, "z"), ("Bash", {"command": "pytest"}, LOG)])
    out, report, _ = run_stages(longer, STAGE, session=session)
    assert report.mode == "incremental"
    assert results(out) == [LOG, "y = 2\n" * 50, "z", LOG]
    fresh, report, _ = run_stages(longer, STAGE)
    assert report.mode == "epoch" and find_markers(results(fresh)[0])
