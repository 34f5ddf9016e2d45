"""Helpers for stage tests: build small requests, run one stage through the real pipeline,
read tool results back, and resolve every marker through the run's CCR store."""

from __future__ import annotations

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.runner.pipeline import Chain, run
from compress.stagekit.stage import Stage
from compress.state.session import Session
from compress.tiers import TierThresholds

OPEN = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1)
"""Everything but the latest assistant turn may be compressed."""


def config(tier: str = "always", **kw) -> CompressConfig:
    tiers = {"always": TierThresholds(10**9, 10**9), "medium": TierThresholds(1, 10**9),
             "high": TierThresholds(1, 1)}[tier]
    return CompressConfig(tiers=tiers, protect_tail_tokens=0, protect_tail_turns=1, **kw)


UNCHANGED_POINTER = ("File unchanged since last read. The content from the earlier Read tool_result in this "
                     "conversation is still current \u2014 refer to that instead of re-reading.")
"""What Claude Code (2.1.90 and later) answers to a Read of a file unchanged since the agent's last Read."""


def anthropic(calls: list[tuple[str, dict, object]], turns_after: int = 1) -> dict:
    """A body with one assistant turn per (tool name, input, result content), then
    `turns_after` plain turns so the calls are old."""
    messages: list[dict] = [{"role": "user", "content": "start"}]
    for n, (name, tool_input, content) in enumerate(calls):
        tid = f"toolu_{n:03d}"
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": name,
                                                           "input": tool_input}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                      "content": content}]})
    for _ in range(turns_after):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
        messages.append({"role": "user", "content": "next"})
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages}


def openai(calls: list[tuple[str, dict, str]], turns_after: int = 1) -> dict:
    import json

    messages: list[dict] = [{"role": "user", "content": "start"}]
    for n, (name, tool_input, content) in enumerate(calls):
        cid = f"call_{n}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(tool_input)}}]})
        messages.append({"role": "tool", "tool_call_id": cid, "content": content})
    for _ in range(turns_after):
        messages.append({"role": "assistant", "content": "ok"})
        messages.append({"role": "user", "content": "next"})
    return {"model": "gpt-4o", "messages": messages}


def codex_exec(commands: list[tuple[str, str]], turns_after: int = 1) -> dict:
    """A Codex Responses request: one exec_command call and output per (command, output), as
    Codex reports a finished command, then `turns_after` plain turns."""
    import json

    items: list[dict] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix it."}]}]
    for n, (cmd, text) in enumerate(commands):
        items.append({"type": "function_call", "name": "exec_command", "call_id": f"call_{n}",
                      "arguments": json.dumps({"cmd": cmd, "workdir": "/repo"})})
        items.append({"type": "function_call_output", "call_id": f"call_{n}",
                      "output": f"Chunk ID: {n}\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\n{text}"})
    for _ in range(turns_after):
        items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]})
        items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "next"}]})
    return {"model": "gpt-5.5", "input": items, "store": False}


def run_stage(body: dict, stage: Stage, cfg: CompressConfig = OPEN, store: CCRStore | None = None):
    store = store or CCRStore.in_memory()
    result = run(body, session=Session.memory(), store=store, config=cfg, chain=Chain([stage]))
    assert not result.report.error, result.report.error
    assert not result.report.errors, result.report.errors
    return result, store


def result_texts(body: dict) -> list[str]:
    """The text of every tool result, in order (both providers)."""
    out = []
    for msg in body["messages"]:
        if msg.get("role") == "tool":
            c = msg["content"]
            out.append(c if isinstance(c, str) else "\n".join(p.get("text", "") for p in c))
        elif isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if block.get("type") == "tool_result":
                    c = block.get("content")
                    out.append(c if isinstance(c, str) else
                               "\n".join(p.get("text", "") for p in c if p.get("type") == "text"))
    return out


def assert_markers_resolve(after: str, before: str, store: CCRStore) -> int:
    """Every marker in `after` resolves to `before` exactly; returns how many there are."""
    markers = find_markers(after)
    for marker in markers:
        lookup = store.get(marker.key)
        assert lookup.ok, lookup.message
        assert lookup.text == before
    return len(markers)


def echoed(lines: list[str], change: int) -> list[str]:
    """`lines` as a host might show them again: as they are (0), the middle one altered (1) or
    dropped (2)."""
    shown = list(lines)
    if change == 1:
        shown[len(lines) // 2] += " changed"
    elif change == 2:
        del shown[len(lines) // 2]
    return shown
