"""JSON content arrays (an MCP tool's result passed on as a string) are cut as the text inside
them, on arrival, with the array in CCR: Claude Code (a string, or a text block holding it),
OpenCode (an OpenAI-shaped tool message), a JSON answer inside (crush_json), an image read."""

from __future__ import annotations

import base64
import json

from hypothesis import example, given
from hypothesis import strategies as st

from ccr.markers import find_markers
from compress.config import CompressConfig
from compress.stagekit.content_arrays import UNWRAPPED, content_array_text
from compress.stages import crush_json, decide_on_arrival
from tests.stagekit import anthropic, assert_markers_resolve, openai, result_texts, run_stage

DEFAULT = CompressConfig()
DOCS = "\n".join(f"## Section {i}\nThe `widget_{i}` option sets \"mode\" {i}; see docs/widget_{i}.md." for i in range(400))
"""A long page an MCP docs tool answers with (quotes and newlines: JSON escapes them)."""
ARRAY = json.dumps([{"type": "text", "text": DOCS}])


def check_cut(after: str, original: str, store) -> None:
    assert len(after) < len(original) / 3
    assert find_markers(after)[0].summary == UNWRAPPED
    assert "## Section 0\nThe `widget_0` option sets \"mode\" 0; see docs/widget_0.md." in after  # no JSON escapes
    assert_markers_resolve(after, original, store)


def test_claude_code_an_mcp_answer_as_a_json_string_is_cut_as_its_text_on_arrival():
    for content in (ARRAY, [{"type": "text", "text": ARRAY}]):
        body = anthropic([("mcp__context7__get-library-docs", {"libraryID": "/widgets"}, content)], turns_after=0)
        result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
        check_cut(result_texts(result.body)[0], ARRAY, store)


def test_opencode_an_mcp_answer_as_a_json_string_is_cut_as_its_text_on_arrival():
    body = openai([("context7_get-library-docs", {"libraryID": "/widgets"}, ARRAY)], turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    check_cut(result_texts(result.body)[0], ARRAY, store)


def test_a_json_answer_inside_a_content_array_is_crushed_as_json():
    rows = [{"id": i, "name": f"item {i}", "status": "ok"} for i in range(300)]
    array = json.dumps([{"type": "text", "text": json.dumps(rows)}])
    body = anthropic([("mcp__db__query", {"sql": "select *"}, array)], turns_after=0)
    arrived = result_texts(run_stage(body, decide_on_arrival.STAGE, DEFAULT)[0].body)[0]
    assert arrived == array  # JSON text inside: crush_json's, once the result is older
    older = anthropic([("mcp__db__query", {"sql": "select *"}, array)])
    result, store = run_stage(older, crush_json.STAGE)
    after = result_texts(result.body)[0]
    assert len(after) < len(array) / 2 and '"item 0"' in after
    assert_markers_resolve(after, array, store)


def test_an_image_read_answered_as_a_content_array_loses_its_base64_on_arrival():
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 300).decode()
    array = json.dumps([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}], indent=2)
    body = anthropic([("Read", {"file_path": "/repo/shot.png"}, array)], turns_after=0)
    result, store = run_stage(body, decide_on_arrival.STAGE, DEFAULT)
    after = result_texts(result.body)[0]
    assert png not in after and len(after) < 1_000 and "image/png" in after
    assert_markers_resolve(after, array, store)


def test_a_read_of_source_in_a_content_array_keeps_its_text():
    source = "\n".join(f"def f_{i}(x):\n    return x + {i}" for i in range(300))
    array = json.dumps([{"type": "text", "text": source}])
    body = anthropic([("Read", {"file_path": "/repo/app.py"}, array)], turns_after=0)
    assert result_texts(run_stage(body, decide_on_arrival.STAGE, DEFAULT)[0].body)[0] == array


def test_only_content_arrays_are_unwrapped():
    for text in ("[]", "[1, 2]", json.dumps([{"type": "row", "text": "x"}]), json.dumps([{"type": "text", "text": 3}]),
                 json.dumps({"type": "text", "text": "x"}), "plain [text]"):
        assert content_array_text(text) is None, text


@given(st.lists(st.text(max_size=40), min_size=1, max_size=5))
def test_the_text_of_a_content_array_is_its_text_parts_in_order(texts):
    assert content_array_text(json.dumps([{"type": "text", "text": t} for t in texts])) == "\n".join(texts)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["type", "text", "data"]), inner,
                                                                                 max_size=3), max_leaves=20)


@given(JSON)
@example([{"type": []}])  # an unhashable part type once raised TypeError
def test_hostile_tool_output_never_breaks_the_unwrapping(value):
    """Tool output is an adversary: any JSON (or none) gives the text of a content array or None,
    never an error; a document nested past what the parser takes is not unwrapped."""
    text = json.dumps(value)
    inner = content_array_text(text)
    assert inner is None or isinstance(inner, str)
    assert content_array_text("[" * 100_000 + "]" * 100_000) is None
