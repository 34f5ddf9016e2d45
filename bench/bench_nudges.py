"""Speed of the nudges replay on a 1,000-turn conversation, as on every incremental request.

    python -m pytest bench/bench_nudges.py --benchmark-only
Target: well under the 5 ms incremental budget once earlier texts are memoised (fresh message
objects each round, as a new request would parse them).
"""

from __future__ import annotations

from compress.formats.requests import from_provider
from compress.stages.nudges import Options, memory_nudges

_TEXTS = ("Reading the file to check the handler. " * 8, "We decided to keep the cache layer. " * 4,
          "不要修改生产配置，必须先跑测试。" * 5, "The root cause was a stale lock file. " * 6)


def _body(turns: int) -> dict:
    messages: list[dict] = [{"role": "user", "content": "start"}]
    for n in range(turns):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": _TEXTS[n % len(_TEXTS)] + str(n)},
            {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}]})
    return {"model": "m", "system": "", "messages": messages}


def test_replay_1000_turns(benchmark):
    body = _body(1000)
    memory_nudges(list(from_provider(body).messages), Options())  # earlier requests saw these texts
    messages = list(from_provider(body).messages)
    given = benchmark(memory_nudges, messages, Options())
    assert given
