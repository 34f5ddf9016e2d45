"""Bad and hostile tool calls to `ctxmill mcp` through the official MCP SDK client over stdio: each
gets an answer (a tool error or a result), the server keeps serving, and no secret given to it
comes back or lands on disk in plain text."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from ccr.store import CCRStore
from tests.reliability.leaky import SECRETS, leaky_text
from tests.reliability.tally import record

ROOT = Path(__file__).resolve().parents[2]
CALL_TIMEOUT = 120  # seconds per call; a liveness bound on a busy machine, not a speed claim


def _calls(key: str, tmp_path: Path) -> list[tuple[str, dict]]:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.jsonl"
    with open(sparse, "wb") as out:
        out.truncate(2 * 2**30)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(bytes(range(256)) * 1000)
    nested: list = []
    for _ in range(200):  # the client serialises no deeper; deeper input: see the raw-stdio test
        nested = [nested]
    return [
        ("deep_expand", {"key": 5}), ("deep_expand", {"key": None}), ("deep_expand", {"key": ["a"]}),
        ("deep_expand", {}), ("deep_expand", {"key": "../../etc/passwd"}), ("deep_expand", {"key": "A" * 32}),
        ("deep_expand", {"key": "0" * 100_000}), ("deep_expand", {"key": key, "lines": "abc"}),
        ("deep_expand", {"key": key, "lines": "9:3"}), ("deep_expand", {"key": key, "lines": 7}),
        ("deep_expand", {"key": key, "grep": "["}), ("deep_expand", {"key": key, "grep": "(a+)+$"}),
        ("deep_expand", {"key": key, "evil": True}),
        ("memory_search", {"query": ""}), ("memory_search", {"query": "retry " * 200_000}),
        ("memory_search", {"query": None}), ("memory_search", {"query": {"a": 1}}),
        ("memory_search", {"query": "retry", "limit": -5}), ("memory_search", {"query": "retry", "limit": 10**12}),
        ("memory_search", {"query": "retry", "limit": "abc"}), ("memory_search", {"query": ".*[(\\"}),
        ("memory_search", {"query": nested}),
        ("history_search", {"query": ""}), ("history_search", {"query": "[", "regex": True}),
        ("history_search", {"query": "(a|aa)+$", "regex": True}), ("history_search", {"query": "x", "since": "later"}),
        ("history_search", {"query": "retry " * 200_000}), ("history_search", {"query": "retry", "limit": 10**12}),
        ("history_search", {"query": "retry", "project": "%_\\"}), ("history_get", {"session": "", "messages": "1"}),
        ("history_get", {"session": "s", "messages": "abc"}), ("history_get", {"session": "s", "messages": "0:100000"}),
        ("memory_store", {"type": "x", "text": "t"}), ("memory_store", {"type": None, "text": "t"}),
        ("memory_store", {"type": "fact", "text": ""}), ("memory_store", {"type": "fact", "text": "y" * 100_000}),
        ("memory_store", {"type": "fact", "text": "t", "tags": "notalist"}),
        ("memory_store", {"type": "fact", "text": "t", "tags": [1, 2]}),
        ("memory_store", {"type": "fact", "text": "t", "tags": ["../../x", "a" * 1000]}),
        ("memory_store", {"type": "fact", "text": "t", "pin": "yes"}),
        ("memory_store", {"type": "fact", "text": "<!-- m-deadbeef 2026-01-01 pinned -->\n## Heading"}),
        ("memory_forget", {"id": ""}), ("memory_forget", {"id": "../../x"}), ("memory_forget", {"id": 5}),
        ("memory_forget", {"id": "m-zzzz"}),
        ("checkpoint", {"transcript_path": "/dev/zero"}), ("checkpoint", {"transcript_path": str(fifo)}),
        ("checkpoint", {"transcript_path": str(tmp_path)}), ("checkpoint", {"transcript_path": "/nonexistent"}),
        ("checkpoint", {"transcript_path": str(sparse)}), ("checkpoint", {"transcript_path": str(garbage)}),
        ("checkpoint", {"transcript_path": 5}), ("checkpoint", {}),
        ("rm_rf", {"path": "/"}),
    ]


def test_bad_tool_calls_get_answers_and_the_server_keeps_serving(tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    home = tmp_path / ".ctxmill"
    with CCRStore(home / "ccr") as store:
        key = store.put("a" * 5000 + "!\n" + "\n".join(f"line {i}" for i in range(100)), "test output")
    calls = _calls(key, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXMILL_HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg"),
           "HOME": str(tmp_path / "user")}
    unanswered: list = []
    answers: list[str] = []

    async def talk() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "ctxmill", "mcp"], env=env,
                                       cwd=str(tmp_path))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), CALL_TIMEOUT)
            stored = await session.call_tool("memory_store", {"type": "fact", "text": leaky_text(1)})
            answers.append(stored.content[0].text if stored.content else "")
            for name, args in calls:
                try:
                    result = await asyncio.wait_for(session.call_tool(name, args), CALL_TIMEOUT)
                    answers.extend(c.text for c in result.content if hasattr(c, "text"))
                except MCPError as exc:  # answered with a JSON-RPC error
                    answers.append(str(exc))
                except Exception as exc:  # noqa: BLE001 - a lost call, counted
                    unanswered.append((name, str(args)[:80], type(exc).__name__, str(exc)[:200]))
            found = await session.call_tool("memory_search", {"query": "GITHUB_TOKEN aws secret key", "limit": 10})
            answers.extend(c.text for c in found.content if hasattr(c, "text"))
            tools = await asyncio.wait_for(session.list_tools(), CALL_TIMEOUT)  # still serving
            assert len(tools.tools) == 7

    asyncio.run(talk())
    on_disk = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    leaked = [kind for kind, secret in SECRETS.items() if secret in "\n".join(answers) or secret.encode() in on_disk]
    record("MCP", "bad and hostile tool calls (official SDK client, stdio)", len(calls) + 2, lost=len(unanswered),
           leaked=len(leaked))
    assert unanswered == [] and leaked == []
    assert json.dumps(answers)  # every answer is text


def test_hostile_json_rpc_lines_do_not_stop_the_server(tmp_path):
    """Raw lines on the server's stdin that no SDK client would send (garbage, invalid UTF-8, a
    request nested 100,000 deep, an 8 MB line, malformed envelopes): every request among them
    gets an answer for its id, and the server answers a valid request after them."""
    import queue
    import subprocess
    import threading

    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXMILL_HOME": str(tmp_path / ".ctxmill"),
           "XDG_DATA_HOME": str(tmp_path / "xdg")}
    requests = {1: b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                2: b'{"jsonrpc":"2.0","id":2,"method":"x","params":{"p":"' + b"z" * 8_000_000 + b'"}}',
                3: b'{"jsonrpc":"2.0","id":3,"method":"tools/call"}',
                4: b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory_search","arguments":'
                   b'{"query":' + b"[" * 300 + b"]" * 300 + b"}}}",
                5: b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":7}'}
    noise = [b"not json at all", b"\xff\xfe\x00garbage", b"[]", b"{}", b'{"jsonrpc":"2.0","method":"x","params":' +
             b"[" * 5000 + b"]" * 5000 + b"}"]
    init = {"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    lines = [json.dumps(init).encode(), b'{"jsonrpc":"2.0","method":"notifications/initialized"}', *noise,
             *requests.values(), json.dumps({"jsonrpc": "2.0", "id": 11, "method": "tools/list"}).encode()]
    server = subprocess.Popen([sys.executable, "-m", "ctxmill", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
    answers: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [answers.put(line) for line in server.stdout], daemon=True).start()
    server.stdin.write(b"\n".join(lines) + b"\n")
    server.stdin.flush()
    answered: dict = {}
    try:
        while 11 not in answered or not set(requests) <= set(answered):
            message = json.loads(answers.get(timeout=CALL_TIMEOUT))
            answered[message.get("id")] = message
    except queue.Empty:
        pass
    finally:
        server.stdin.close()
        server.wait(timeout=CALL_TIMEOUT)
    unanswered = sorted(set(requests) - set(answered))
    record("MCP", "hostile JSON-RPC lines on stdin", len(requests) + len(noise), lost=len(unanswered))
    assert unanswered == [] and all("error" in answered[i] for i in requests)
    assert len(answered[11]["result"]["tools"]) == 7
