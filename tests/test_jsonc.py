"""ground.jsonc: JSONC read as OpenCode reads it; one member set or removed, the rest byte for byte."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ground.jsonc import loads, remove_member, set_member

CONFIG = """{
  // my provider
  "$schema": "https://opencode.ai/config.json",
  /* block
     comment */
  "provider": {"anthropic": {"options": {"baseURL": "http://x/v1"}}},
  "mcp": {
    "mine": {"type": "local", "command": ["me"]}, // keep this
  },
}
"""


def test_loads_reads_comments_and_trailing_commas():
    assert loads(CONFIG)["mcp"] == {"mine": {"type": "local", "command": ["me"]}}
    assert loads("") == {} and loads('{"a": "// not a comment", "b": "/* nor this */"}')["a"] == "// not a comment"
    for bad in ('{"a": 1', '{"a" 1}', '{"a": 1} x', "/* open", "{a: 1}"):
        with pytest.raises(ValueError, match="line"):
            loads(bad)


def test_set_member_adds_and_replaces_in_place_and_keeps_comments():
    entry = {"type": "local", "command": ["ctxmill", "mcp"], "enabled": True}
    added = set_member(CONFIG, ["mcp", "ctxmill"], entry)
    assert loads(added)["mcp"] == {"mine": {"type": "local", "command": ["me"]}, "ctxmill": entry}
    for kept in ("// my provider", "/* block\n     comment */", "{\"type\": \"local\", \"command\": [\"me\"]}, // keep this\n"):
        assert kept in added
    again = set_member(added, ["mcp", "ctxmill"], {**entry, "enabled": False})
    assert loads(again)["mcp"]["ctxmill"]["enabled"] is False and again.count('"ctxmill":') == 1
    assert set_member(again, ["mcp", "ctxmill"], entry) == added
    fresh = set_member('{\n  "model": "x" // mine\n}\n', ["mcp", "ctxmill"], entry)
    assert loads(fresh) == {"model": "x", "mcp": {"ctxmill": entry}} and "// mine" in fresh
    assert loads(set_member("", ["mcp", "ctxmill"], entry)) == {"mcp": {"ctxmill": entry}}
    assert loads(set_member("{}", ["a"], 1)) == {"a": 1}
    with pytest.raises(ValueError):
        set_member('{"mcp": []}', ["mcp", "ctxmill"], entry)


def test_remove_member_undoes_set_member():
    entry = {"type": "local", "command": ["ctxmill", "mcp"]}
    added = set_member(CONFIG, ["mcp", "ctxmill"], entry)
    assert loads(remove_member(added, ["mcp", "ctxmill"])) == loads(CONFIG)
    assert "// keep this" in remove_member(added, ["mcp", "ctxmill"])
    assert remove_member(CONFIG, ["mcp", "absent"]) == CONFIG
    only = set_member('{"a": 1}', ["mcp", "ctxmill"], entry)
    assert loads(remove_member(only, ["mcp", "ctxmill"])) == {"a": 1, "mcp": {}}
    assert loads(remove_member(only, ["mcp"])) == {"a": 1}


keys = st.text(st.characters(codec="utf-8", exclude_characters='"\\'), min_size=1, max_size=6)
values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(keys, values, max_size=5), st.lists(keys, min_size=1, max_size=3), values,
       st.sampled_from([None, 2, 4]), st.booleans())
def test_edits_match_the_same_change_on_the_parsed_value(doc, path, value, indent, comments):
    text = json.dumps(doc, indent=indent)
    if comments:
        text = "// head\n" + text.replace("\n", " /* c */\n", 1) + "\n// tail\n"
    target = json.loads(json.dumps(doc))
    node = target
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value
    try:
        edited = set_member(text, path, value)
    except ValueError:  # a non-object on the way
        assert any(not isinstance(v, dict) for v in _walk(doc, path[:-1]))
        return
    assert loads(edited) == target
    removed = remove_member(edited, path)
    node.pop(path[-1])
    assert loads(removed) == target
    if comments:
        assert "// head" in edited and "// tail" in edited


def _walk(doc, path):
    node = doc
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return
        node = node[key]
        yield node
