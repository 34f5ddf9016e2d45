"""crush_json: table form, lossy crush keeping errors/anomalies/keys, valid JSON, CCR round trip."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers
from compress.stages import crush_json
from compress.stages.crush_json import CrushOptions, crush_text
from tests.stagekit import anthropic, assert_markers_resolve, openai, result_texts, run_stage

KEY = "0123456789abcdef0123456789abcdef"


def rows(n: int) -> list[dict]:
    return [{"id": i, "name": f"user{i}", "status": "ok", "latency_ms": 10 + i % 7} for i in range(n)]


def all_keys(value) -> set:
    """Object keys of a JSON value, counting table columns as keys."""
    keys: set = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if "_ctxmill" in v and "columns" in v:
                keys.update(v["columns"])
                stack.extend(v["rows"])
                continue
            keys.update(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return keys


def test_uniform_objects_become_a_lossless_table():
    text = json.dumps(rows(200), indent=2)
    out = json.loads(crush_text(text, KEY, CrushOptions()))
    assert out["columns"] == ["id", "name", "status", "latency_ms"]
    assert out["rows"][150] == [150, "user150", "ok", 10 + 150 % 7]
    assert len(out["rows"]) == 200
    assert find_markers(out["_ctxmill"])[0].key == KEY


def test_mixed_array_is_crushed_keeping_errors_anomalies_and_every_key():
    items = rows(300)
    for item in items[::2]:
        item["extra"] = True  # not uniform: no table
    items[120]["status"] = "failed"
    items[180]["latency_ms"] = 90_000
    items[201]["only_here"] = 1
    items[250]["error"] = "connection refused"
    text = json.dumps({"results": items, "count": 300})
    out = json.loads(crush_text(text, KEY, CrushOptions()))
    kept = [x for x in out["results"] if isinstance(x, dict)]
    ids = {x["id"] for x in kept}
    assert {0, 1, 2, 3, 4, 297, 298, 299} <= ids  # head 30% and tail 15% of 15
    assert {120, 180, 201, 250} <= ids  # failed status, outlier, new key, error
    assert all_keys(json.loads(text)) <= all_keys(out)
    gaps = [x for x in out["results"] if isinstance(x, str)]
    assert gaps and all(find_markers(g)[0].key == KEY for g in gaps)
    dropped = sum(int(g.split()[1].replace(",", "")) for g in gaps)
    assert dropped + len(kept) == 300
    assert out["count"] == 300


def test_nested_child_arrays_use_the_larger_limit():
    doc = {"groups": [{"name": f"g{i}", "members": list(range(25 if i else 60))} for i in range(3)]}
    out = json.loads(crush_text(json.dumps(doc), KEY, CrushOptions()))
    assert out["groups"][1]["members"] == list(range(25))  # <= 30 items nested: untouched
    assert len(out["groups"][0]["members"]) < 60


def test_not_json_or_mixed_text_is_left_alone():
    assert crush_text("Result:\n[1, 2, 3]", KEY, CrushOptions()) is None
    assert crush_text("[1, 2, 3", KEY, CrushOptions()) is None
    assert crush_text("[1, 2, 3]", KEY, CrushOptions()) is None


def test_deep_nesting_does_not_crash():
    deep = "[" * 100_000 + "]" * 100_000
    assert crush_text(deep, KEY, CrushOptions()) is None
    deep_obj = '{"a":' * 3000 + "1" + "}" * 3000
    assert crush_text(deep_obj, KEY, CrushOptions()) is None


def test_stage_in_both_providers_resolves_and_is_idempotent():
    text = json.dumps([{"n": i, "tags": ["x"] * (i % 3)} for i in range(400)])
    for body in (anthropic([("mcp__db__query", {"sql": "select"}, text)]),
                 openai([("query", {"sql": "select"}, text)])):
        result, store = run_stage(body, crush_json.STAGE)
        after = result_texts(result.body)[0]
        assert len(after) < 0.85 * len(text)
        json.loads(after)
        assert assert_markers_resolve(after, text, store) >= 1
        again, _ = run_stage(result.body, crush_json.STAGE, store=store)
        assert again.body == result.body


def test_small_saving_keeps_the_original():
    text = json.dumps(list(range(20)))
    body = anthropic([("query", {}, text)])
    result, _ = run_stage(body, crush_json.STAGE)
    assert result_texts(result.body)[0] == text


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=40),
                               st.dictionaries(st.text(max_size=5), children, max_size=5)),
    max_leaves=80,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values.filter(lambda v: isinstance(v, (list, dict))), st.integers(3, 20))
def test_property_valid_json_keys_survive_never_larger(value, max_items):
    text = json.dumps(value, indent=1)
    out = crush_text(text, KEY, CrushOptions(max_items=max_items, nested_max_items=max_items * 2))
    if out is None:
        return
    parsed = json.loads(out)
    assert all_keys(value) <= all_keys(parsed)
    body = anthropic([("query", {}, text)])
    result, store = run_stage(body, crush_json.STAGE)
    after = result_texts(result.body)[0]
    assert len(after) <= len(text)
    json.loads(after)
    assert_markers_resolve(after, text, store)
