"""Helpers for stage tests: hand-made agent sessions in both provider shapes, running a chain
of stages, and the invariants every stage run must keep."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import from_provider
from compress.model import TOOL_RESULT, TOOL_USE
from compress.runner import pipeline
from compress.runner.run_report import RunReport
from compress.stagekit.stage import Stage
from compress.state.session import Session
from compress.tiers import TierThresholds
from ground.jsonbytes import dumps
from ground.redact import redact

OPEN_CONFIG = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1)
"""Everything but the last assistant turn may change."""
MEDIUM_CONFIG = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1,
                               tiers=TierThresholds(medium=1, high=10**9))
"""As OPEN_CONFIG, at the medium tier whatever the size."""

Call = tuple[str, Any, str] | tuple[str, Any, str, bool]
"""(tool name, input, result text[, is_error]): one call, made in its own assistant turn."""


def anthropic_body(calls: list[Call]) -> dict:
    messages: list[dict] = [{"role": "user", "content": "start"}]
    for i, (name, tool_input, result, *error) in enumerate(calls):
        tid = f"toolu_{i:03d}"
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"step {i}"},
                                                          {"type": "tool_use", "id": tid, "name": name, "input": tool_input}]})
        block = {"type": "tool_result", "tool_use_id": tid, "content": result}
        if error and error[0]:
            block["is_error"] = True
        messages.append({"role": "user", "content": [block]})
    messages += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages}


def openai_body(calls: list[Call]) -> dict:
    messages: list[dict] = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "start"}]
    for i, (name, tool_input, result, *_) in enumerate(calls):
        cid = f"call_{i}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(tool_input)}}]})
        messages.append({"role": "tool", "tool_call_id": cid, "content": result})
    messages += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    return {"model": "gpt-4o", "messages": messages}


BODIES = {"anthropic": anthropic_body, "openai": openai_body}


def run_stages(body: Any, *stages: Stage, config: CompressConfig = OPEN_CONFIG, store: CCRStore | None = None,
               session: Session | None = None) -> tuple[Any, RunReport, CCRStore]:
    store = store or CCRStore.in_memory()
    chain = pipeline.Chain(stages) if stages else None
    result = pipeline.run(body, session=session or Session.memory(), store=store, config=config, chain=chain)
    assert not result.report.error, result.report.error
    assert not result.report.errors, result.report.errors
    return result.body, result.report, store


def strings(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """Every string in a JSON value with its key path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from strings(item, (*path, i))


def check_run(before: Any, after: Any, store: CCRStore) -> int:
    """Assert the invariants of a stage run; return how many markers and notes were written.

    Pairing and ids intact, output no larger, user text untouched, and every new marker or note
    resolves through `store` to the exact original it replaced (the whole result text, or the
    input string at the same key path)."""
    assert len(dumps(after)) <= len(dumps(before))
    old, new = from_provider(before).messages, from_provider(after).messages
    assert len(old) == len(new)
    written = 0
    for a, b in zip(old, new):
        assert a.role == b.role
        assert [(x.kind, x.tool_id, x.tool_name) for x in a.blocks] == [(y.kind, y.tool_id, y.tool_name) for y in b.blocks]
        if a.role == "user":
            assert [x.text for x in a.blocks if x.kind != TOOL_RESULT] == [y.text for y in b.blocks if y.kind != TOOL_RESULT]
        for x, y in zip(a.blocks, b.blocks):
            if x.kind == TOOL_RESULT and x.result_text != y.result_text:
                new_markers = [m for m in find_markers(y.result_text) if m not in find_markers(x.result_text)]
                assert new_markers, "a changed result must carry a marker"
                for marker in new_markers:
                    assert store.get(marker.key).text == redact(x.result_text)  # CCR keeps originals redacted
                written += len(new_markers)
            if x.kind == TOOL_USE and x.input != y.input:
                assert type(x.input) is type(y.input)
                old_strings = dict(strings(x.input))
                new_strings = dict(strings(y.input))
                assert old_strings.keys() == new_strings.keys()  # same keys, strings stay strings
                for path, text in new_strings.items():
                    if text != old_strings[path]:
                        (note,) = find_markers(text)
                        assert note.kind == "note" and text == text[note.start:note.end]
                        assert store.get(note.key).text == redact(old_strings[path])
                        written += 1
    return written
