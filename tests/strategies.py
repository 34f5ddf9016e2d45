"""Hypothesis strategies for provider requests: tool-using conversations in Anthropic, OpenAI
Chat and OpenAI Responses shape, with paired tool calls, thinking, images, unicode and injected reminders."""

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

# -- wild text: every plane of unicode, lone surrogates, controls, ANSI, marker look-alikes --------

_WILD_PIECES = st.sampled_from([
    "数据库连接失败", "ファイル", "한국어", "😀👩‍💻🏳️‍🌈", "\ud800", "\udfff", "\x00", "\x1b[31;1mERROR\x1b[0m", "\r\n",
    "\u2028", "\ufeff", "[ctxmill: x · deep_expand(\"", '"0123456789abcdef0123456789abcdef")]', "<<ctxmill: ",
    "<system-reminder>", "</system-reminder>", "{\"a\": [1, {\"b\": null}]}", "Traceback (most recent call last):",
    "error: ", "\t", "    at foo (bar.js:1:2)", "sk-ant-api03-" + "x" * 24, "AKIAJ4Q7XKZ2L5WRT3NB",
])
wild_texts = st.one_of(
    st.text(max_size=80),  # all categories, including lone surrogates (Cs)
    st.lists(st.one_of(_WILD_PIECES, st.text(max_size=8)), max_size=12).map("".join),
)
wild_long_texts = st.one_of(
    wild_texts,
    st.builds(lambda line, n: "\n".join(f"{i}: {line}" for i in range(n)), wild_texts, st.integers(0, 300)),
    st.builds(lambda t, n: t * n, wild_texts, st.integers(1, 50)),
)


@st.composite
def anthropic_requests(draw, max_turns: int = 8, texts=texts, long_texts=long_texts, wild: bool = False) -> dict:
    """A valid Anthropic Messages body: user text, then assistant turns whose tool_uses are
    each answered by exactly one tool_result in the next user message. `wild` adds redacted
    thinking, unknown block types, cache_control fields and tool_result content nested in
    lists with images and empty parts."""
    messages: list[dict] = [{"role": "user", "content": draw(st.one_of(texts, st.just("start")))}]
    counter = 0
    for _ in range(draw(st.integers(0, max_turns))):
        content: list[dict] = []
        if draw(st.booleans()):
            content.append({"type": "thinking", "thinking": draw(texts), "signature": "sig"})
        if draw(st.booleans()):
            content.append({"type": "text", "text": draw(long_texts)})
        if wild and draw(st.booleans()):
            content.append(draw(st.sampled_from([{"type": "redacted_thinking", "data": "EmwKAhgBEgy3"},
                                                 {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                                                  "input": {"query": "x"}}])))
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
                if wild:
                    body = draw(st.one_of(st.just(body), st.just([]), st.lists(st.one_of(
                        st.builds(lambda t: {"type": "text", "text": t, "cache_control": {"type": "ephemeral"}}, long_texts),
                        st.just({"type": "text", "text": ""}), image,
                        st.just({"type": "document", "source": {"type": "text", "data": "doc"}})), max_size=4)))
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
def openai_requests(draw, max_turns: int = 8, texts=texts, long_texts=long_texts) -> dict:
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


@st.composite
def responses_requests(draw, max_turns: int = 8, texts=texts, long_texts=long_texts, wild: bool = False) -> dict:
    """A valid OpenAI Responses body as Codex sends it: developer and user message items, then
    replies of reasoning (encrypted), assistant text and calls (function_call with JSON
    arguments, freeform custom_tool_call, local_shell_call), each answered by its output item.
    `wild` adds type-less messages, images, list outputs and item types no stage reads."""
    def user(text: str) -> dict:
        if wild and draw(st.booleans()):
            return {"role": "user", "content": text}
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}

    items: list = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": draw(texts)}]},
                   user(draw(texts) or "start")]
    counter = 0
    for _ in range(draw(st.integers(0, max_turns))):
        if draw(st.booleans()):
            items.append({"type": "reasoning", "id": f"rs_{counter}", "summary": [], "content": None,
                          "encrypted_content": "gAAAAB" + "x" * draw(st.integers(0, 40))})
        if draw(st.booleans()):
            items.append({"type": "message", "role": "assistant", "id": f"msg_{counter}",
                          "content": [{"type": "output_text", "text": draw(long_texts), "annotations": []}]})
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            counter += 1
            call_id = f"call_{counter}"
            kind = draw(st.sampled_from(["function", "function", "custom", "shell"]))
            if kind == "function":
                arguments = json.dumps(draw(tool_inputs)) if draw(st.integers(0, 9)) else "{not json"
                item = {"type": "function_call", "name": draw(st.sampled_from(["exec_command", "shell", *TOOL_NAMES])),
                        "arguments": arguments, "call_id": call_id}
            elif kind == "custom":
                item = {"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch",
                        "input": f"*** Begin Patch\n*** Add File: a.txt\n+{draw(long_texts)}\n*** End Patch\n"}
            else:
                item = {"type": "local_shell_call", "id": f"lsh_{counter}", "call_id": call_id, "status": "completed",
                        "action": {"type": "exec", "command": ["bash", "-lc", draw(st.sampled_from(["cat a.txt", "ls"]))]}}
            items.append(item)
            calls.append((call_id, "custom_tool_call_output" if kind == "custom" else "function_call_output"))
        if wild and draw(st.booleans()):
            items.append(draw(st.sampled_from([
                {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
                {"type": "item_reference", "id": "msg_0"}])))
        for call_id, kind in calls:
            output = draw(long_texts)
            if wild and draw(st.booleans()):
                output = draw(st.lists(st.one_of(st.builds(lambda t: {"type": "input_text", "text": t}, long_texts),
                                                 st.just({"type": "input_image", "image_url": "data:image/png;base64,iVBO"})),
                                       max_size=3))
            items.append({"type": kind, "call_id": call_id, "output": output})
        if not calls or draw(st.booleans()):
            items.append(user(draw(texts) or "go on"))
    body = {"model": "gpt-5.5", "input": items, "tools": [], "store": False, "stream": draw(st.booleans()),
            "include": ["reasoning.encrypted_content"]}
    if draw(st.booleans()):
        body["instructions"] = draw(texts)
    if draw(st.booleans()):
        body["prompt_cache_key"] = draw(texts)
    return body


requests = st.one_of(anthropic_requests(), openai_requests(), responses_requests())
wild_requests = st.one_of(anthropic_requests(texts=wild_texts, long_texts=wild_long_texts, wild=True),
                          openai_requests(texts=wild_texts, long_texts=wild_long_texts),
                          responses_requests(texts=wild_texts, long_texts=wild_long_texts, wild=True))
"""Requests with any unicode (CJK, emoji, lone surrogates), controls, ANSI, marker look-alikes and
every block type, for the properties that must hold on any input."""


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


# -- recorded sessions: items built from the keys the session readers look at, plus garbage lines

SESSION_KEYS = [
    "type", "role", "content", "text", "message", "id", "name", "input", "output", "arguments", "call_id",
    "tool_use_id", "tool_call_id", "tool_calls", "function", "payload", "parts", "info", "state", "status",
    "tool", "toolName", "toolInput", "toolResult", "toolUseId", "isError", "is_error", "usage", "uuid",
    "parentUuid", "isSidechain", "isMeta", "subtype", "history", "messages", "request", "model", "thought",
    "action", "callID", "thinking", "signature", "timestamp", "sessionId", "order",
]
SESSION_VALUES = ["user", "assistant", "system", "tool", "tool_use", "tool_result", "text", "function_call",
                  "function_call_output", "response_item", "message", "completed", "error", "compact_boundary",
                  "custom_tool_call", "turn_context", "session_meta", "reasoning", "developer"]
session_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 10**12), st.floats(allow_nan=False), wild_texts,
              st.sampled_from(SESSION_VALUES)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(SESSION_KEYS), children, max_size=6)),
    max_leaves=25,
)
session_items = st.dictionaries(st.sampled_from(SESSION_KEYS), session_values, max_size=8)
garbage_lines = st.one_of(st.text(alphabet=st.characters(blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                                  max_size=60).filter(lambda s: s.strip() and not s.strip().startswith(("{", "["))),
                          st.just('{"type": "user", "message": {"role": "user", "content": [{"type": "te'))


@st.composite
def session_jsonl(draw) -> tuple[str, int]:
    """(JSONL text, number of lines that are not JSON objects)."""
    lines, bad = [], 0
    for _ in range(draw(st.integers(0, 25))):
        if draw(st.integers(0, 4)) == 0:
            lines.append(draw(garbage_lines))
            bad += 1
        else:
            lines.append(json.dumps(draw(session_items)))
    return "\n".join(lines), bad
