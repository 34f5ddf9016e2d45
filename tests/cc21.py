"""Request bodies shaped like Claude Code 2.1's (written here, modelled on what the real client
sends to a stand-in; see tests/e2e): a billing-header system block, `role: "system"` messages
inside `messages` holding the host's and its hooks' context (one after the first prompt, one
after each later prompt), adaptive thinking with every earlier thinking block sent back with
its signature, `context_management` keeping all thinking, and one cache breakpoint on the last
block of the last message.
"""

from __future__ import annotations

import copy
import json

KEEP_ALL = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
REMINDER = ("<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
            "# currentDate\nToday's date is 2026-11-23.\n</system-reminder>\n")


def host_context(hook_text: str = "") -> dict:
    """The system message Claude Code puts after a prompt: agent types, skills and hook output."""
    body = "Available agent types for the Agent tool:\n" + "".join(
        f"- agent-{i}: handles kind {i} of task\n" for i in range(40))
    if hook_text:
        body += f"\nUserPromptSubmit hook additional context: {hook_text}"
    return {"role": "system", "content": body}


def log_output(n: int, lines: int = 400) -> str:
    rows = [f"[build] compiling module_{i}.py ... ok ({i}/{lines}) step {n}" for i in range(1, lines + 1)]
    return "Exit code 1\n" + "\n".join(rows) + f"\nBUILD FAILED: step {n}"


def tool_turn(n: int, *, thinking: bool = True, text: str = "", output: str | None = None) -> list[dict]:
    """An assistant message (thinking, text, one Bash call) and the user message with its result."""
    content: list[dict] = []
    if thinking:
        content.append({"type": "thinking", "thinking": f"Step {n}: the build log should tell me more.",
                        "signature": f"sig-{n:03d}" + "A" * 40})
    if text:
        content.append({"type": "text", "text": text})
    content.append({"type": "tool_use", "id": f"toolu_{n:03d}", "name": "Bash",
                    "input": {"command": "sh build.sh", "description": f"Run the build ({n})"}})
    result = {"type": "tool_result", "tool_use_id": f"toolu_{n:03d}", "is_error": True,
              "content": log_output(n) if output is None else output}
    return [{"role": "assistant", "content": content}, {"role": "user", "content": [result]}]


def body(messages: list[dict], *, keep_all: bool = True) -> dict:
    """A request with `messages`, the cache breakpoint moved onto the last block of the last one."""
    messages = copy.deepcopy(messages)
    for m in messages:
        if isinstance(m["content"], list):
            for b in m["content"]:
                b.pop("cache_control", None)
    last = messages[-1]
    if isinstance(last["content"], list):
        last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    out = {
        "model": "claude-opus-4-8",
        "messages": messages,
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197.abc; cc_entrypoint=sdk-cli;"},
                   {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}},
                   {"type": "text", "text": "Main prompt. " * 200, "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": n, "description": f"{n} tool", "input_schema": {"type": "object"}}
                  for n in ("Bash", "Read", "Edit", "Grep")],
        "metadata": {"user_id": json.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": "s-1"})},
        "max_tokens": 64000,
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
        "stream": True,
    }
    if keep_all:
        out["context_management"] = copy.deepcopy(KEEP_ALL)
    return out


def prompt(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": REMINDER}, {"type": "text", "text": text}]}


def later_prompt(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def final(text: str, *, thinking: bool = True) -> dict:
    content = [{"type": "thinking", "thinking": "Done, summarise.", "signature": "sig-final" + "B" * 40}] if thinking else []
    return {"role": "assistant", "content": content + [{"type": "text", "text": text}]}
