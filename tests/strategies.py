"""Hypothesis strategies for provider requests: tool-using conversations in Anthropic and
OpenAI shape, with paired tool calls, thinking, images, unicode and injected reminders."""

from __future__ import annotations

import json

from hypothesis import strategies as st

TOOL_NAMES = ["Read", "Bash", "Grep", "Glob", "Edit", "Write", "WebFetch", "TodoWrite", "mcp__ctxmill__memory_search"]

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
long_texts = st.one_of(
    texts,
    st.builds(lambda line, n: "\n".join(f"{i}: {line}" for i in range(n)), texts, st.integers(0, 400)),
    st.builds(lambda t, r: f"{t}\n<system-reminder>{r * 40}</system-reminder>\n{t}", texts, texts),
    st.builds(lambda t: f"<thinking>{t * 20}</thinking>answer {t}", texts),
    st.sampled_from(["数据库连接失败，请检查配置。" * 30, "Traceback (most recent call last):\n  File \"x.py\"\nValueError: bad"]),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), texts),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(texts, children, max_size=4)),
    max_leaves=12,
)
tool_inputs = st.dictionaries(st.sampled_from(["file_path", "command", "pattern", "content", "old_string"]),
                              st.one_of(texts, long_texts), max_size=3)
image = st.just({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})


@st.composite
def anthropic_requests(draw, max_turns: int = 8) -> dict:
    """A valid Anthropic Messages body: user text, then assistant turns whose tool_uses are
    each answered by exactly one tool_result in the next user message."""
    messages: list[dict] = [{"role": "user", "content": draw(st.one_of(texts, st.just("start")))}]
    counter = 0
    for _ in range(draw(st.integers(0, max_turns))):
        content: list[dict] = []
        if draw(st.booleans()):
            content.append({"type": "thinking", "thinking": draw(texts), "signature": "sig"})
        if draw(st.booleans()):
            content.append({"type": "text", "text": draw(long_texts)})
        uses = []
        for _ in range(draw(st.integers(0 if content else 1, 3))):
            counter += 1
            tid = f"toolu_{counter:03d}"
            uses.append(tid)
            content.append({"type": "tool_use", "id": tid, "name": draw(st.sampled_from(TOOL_NAMES)),
                            "input": draw(tool_inputs)})
        messages.append({"role": "assistant", "content": content})
        if uses:
            results = []
            for tid in uses:
                block: dict = {"type": "tool_result", "tool_use_id": tid}
                body = draw(st.one_of(long_texts, st.lists(st.one_of(
                    st.builds(lambda t: {"type": "text", "text": t}, long_texts), image), max_size=3)))
                block["content"] = body
                if draw(st.booleans()):
                    block["is_error"] = draw(st.booleans())
                results.append(block)
            extra = [{"type": "text", "text": draw(texts)}] if draw(st.booleans()) else []
            messages.append({"role": "user", "content": results + extra})
        else:
            messages.append({"role": "user", "content": draw(st.one_of(texts, st.lists(
                st.builds(lambda t: {"type": "text", "text": t}, texts), min_size=1, max_size=2))) or "next"})
    body = {"model": draw(st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-1"])), "max_tokens": 1024,
            "messages": messages}
    if draw(st.booleans()):
        body["system"] = draw(texts)
    if draw(st.booleans()):
        body["metadata"] = {"user_id": draw(texts)}
    return body


@st.composite
def openai_requests(draw, max_turns: int = 8) -> dict:
    """A valid OpenAI Chat Completions body with tool_calls answered by role=tool messages."""
    messages: list[dict] = [{"role": "system", "content": draw(texts)}, {"role": "user", "content": draw(texts)}]
    counter = 0
    for _ in range(draw(st.integers(0, max_turns))):
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            counter += 1
            arguments = json.dumps(draw(tool_inputs)) if draw(st.integers(0, 9)) else "{not json"
            calls.append({"id": f"call_{counter}", "type": "function",
                          "function": {"name": draw(st.sampled_from(TOOL_NAMES)), "arguments": arguments}})
        msg: dict = {"role": "assistant", "content": draw(st.one_of(st.none(), long_texts)) if calls else draw(long_texts)}
        if calls:
            msg["tool_calls"] = calls
        messages.append(msg)
        for call in calls:
            content = draw(st.one_of(long_texts, st.lists(st.builds(lambda t: {"type": "text", "text": t}, long_texts),
                                                          min_size=1, max_size=2)))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        messages.append({"role": "user", "content": draw(texts) or "go on"})
    return {"model": "gpt-4o", "messages": messages, "temperature": 0}


requests = st.one_of(anthropic_requests(), openai_requests())


# -- agent sessions that write, edit, re-read, repeat and fail (for the input and dedup stages)

AGENT_FILES = ["/repo/src/app.py", "/repo/src/db.py", "src/app.py", "notes.md"]
file_bodies = st.builds(lambda word, n: "\n".join(f"{word} = {i}  # 第{i}行" for i in range(n)),
                        st.sampled_from(["alpha", "beta", "数据"]), st.integers(0, 120))


@st.composite
def agent_calls(draw) -> tuple:
    """One (tool name, input, result text, is_error) call of a coding agent: file reads, writes,
    edits, heredocs, patches, repeated commands and failures over a few shared files."""
    path = draw(st.sampled_from(AGENT_FILES))
    body = draw(file_bodies)
    kind = draw(st.sampled_from(["read", "write", "edit", "multiedit", "heredoc", "patch", "bash", "fail"]))
    if kind == "read":
        return "Read", {"file_path": path, "offset": draw(st.sampled_from([None, 1]))}, body, False
    if kind == "write":
        return "Write", {"file_path": path, "content": body}, "File written", False
    if kind == "edit":
        return "Edit", {"file_path": path, "old_string": body, "new_string": draw(file_bodies)}, "ok", False
    if kind == "multiedit":
        edits = [{"old_string": draw(file_bodies), "new_string": body} for _ in range(draw(st.integers(1, 3)))]
        return "MultiEdit", {"file_path": path, "edits": edits}, "ok", False
    if kind == "heredoc":
        return "Bash", {"command": f"cat > {path} <<'EOF'\n{body}\nEOF"}, "", False
    if kind == "patch":
        lines = "\n".join("+" + line for line in body.splitlines())
        return "apply_patch", {"input": f"*** Begin Patch\n*** Update File: {path}\n@@\n{lines}\n*** End Patch"}, "Done", False
    if kind == "bash":
        return "Bash", {"command": draw(st.sampled_from(["pytest -q", "ls -la", "git status"]))}, body, False
    failed_input = draw(st.sampled_from([{"file_path": path, "content": body},
                                         {"command": f"python -c '{body}'"}]))
    error = draw(st.sampled_from(["Error: permission denied\n", "Traceback (most recent call last):\n"])) + body
    return draw(st.sampled_from(["Write", "Bash"])), failed_input, error, draw(st.booleans())


@st.composite
def agent_sessions(draw, max_calls: int = 14) -> list[tuple]:
    """A list of agent calls in which some calls repeat earlier ones exactly (same input and
    output), as agents re-read files and re-run commands."""
    calls = draw(st.lists(agent_calls(), min_size=1, max_size=max_calls))
    for _ in range(draw(st.integers(0, 4))):
        calls.insert(draw(st.integers(0, len(calls))), calls[draw(st.integers(0, len(calls) - 1))])
    return calls
