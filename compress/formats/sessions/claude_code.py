"""Claude Code session JSONL (`~/.claude/projects/<project>/<session>.jsonl`).

Lines carry `uuid` / `parentUuid`; the conversation is the chain from the last message back
to the root. A host compaction (`compact_boundary`, chained on by `logicalParentUuid`) is
followed through, and its summary message dropped, so the replay keeps the whole history and
can tell what ctxmill would have done instead of compacting. Parallel tool calls put their
results on sibling branches: a result joins when its `tool_use_id` answers a call on the
chain. Sidechain (sub-agent) and meta lines, progress, attachments, snapshots and system
lines are skipped. Lines of one API response (same `message.id`, else `requestId`) form one
assistant message and one model call, with that response's `usage`. When that usage shows the
host kept earlier turns' thinking (`kept_thinking`), the replayed requests ask for it too.
"""

from __future__ import annotations

from typing import Any

from compress.formats.requests.anthropic import keep_all_thinking
from compress.formats.sessions.builders import AnthropicBuilder
from compress.formats.sessions.kept_thinking import host_kept_thinking
from compress.formats.sessions.transcript import Compaction, Transcript, iter_jsonl
from compress.formats.usage import usage_of_event
from ground.times import iso_seconds

NAME = "claude-code"
PROVIDER = "anthropic"
_MESSAGE_TYPES = ("user", "assistant")


def sniff(sample: list[Any]) -> bool:
    return any(isinstance(x, dict) and "parentUuid" in x and "sessionId" in x for x in sample)


def starts_turn(line: dict[str, Any]) -> bool:
    """Whether `line` is a person's new prompt on the main conversation (not a tool's result, a
    sidechain, meta or summary line): where `read_session_pieces` may cut a long session."""
    message = line.get("message")
    if line.get("type") != "user" or not isinstance(message, dict) or any(
            line.get(flag) for flag in ("isSidechain", "isMeta", "isCompactSummary")):
        return False
    content = message.get("content")
    return isinstance(content, str) or isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _main_chain(lines: list[dict[str, Any]]) -> set[str]:
    """uuids on the path from the last non-sidechain message back to the root. A compaction
    boundary whose logical parent is not in the file (the host did not record it) continues
    from the last main-chain message written before it."""
    by_uuid = {x["uuid"]: x for x in lines if isinstance(x.get("uuid"), str)}
    position = {id(x): i for i, x in enumerate(lines)}
    leaf = next((x for x in reversed(lines) if x.get("type") in _MESSAGE_TYPES
                 and not x.get("isSidechain") and isinstance(x.get("uuid"), str)), None)
    chain: set[str] = set()
    node = leaf
    while node is not None and node["uuid"] not in chain:
        chain.add(node["uuid"])
        parent = node.get("parentUuid") or node.get("logicalParentUuid")
        found = by_uuid.get(parent) if isinstance(parent, str) else None
        if found is None and node.get("subtype") == "compact_boundary":
            found = _before(lines, position[id(node)])
        node = found
    return chain


def _before(lines: list[dict[str, Any]], index: int) -> dict[str, Any] | None:
    """The last main-chain user or assistant line written before `index`."""
    for x in reversed(lines[:index]):
        if x.get("type") in _MESSAGE_TYPES and not x.get("isSidechain") and isinstance(x.get("uuid"), str):
            return x
    return None


def _response_id(line: dict[str, Any]) -> str:
    message = line["message"]
    return str(message.get("id") or line.get("requestId") or line.get("uuid"))


def _content(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _is_message(line: dict[str, Any], transcript: Transcript) -> bool:
    if line.get("type") not in _MESSAGE_TYPES:
        if line.get("type") == "system" and line.get("subtype") == "compact_boundary":
            transcript.host_compactions += 1
        transcript.skipped[str(line.get("type"))] += 1
        return False
    if line.get("isSidechain") or line.get("isMeta") or line.get("isCompactSummary"):
        transcript.skipped["sidechain/meta/summary"] += 1
        return False
    if not isinstance(line.get("message"), dict):
        transcript.malformed += 1
        return False
    if line["message"].get("model") == "<synthetic>":  # host-written error stand-in, not a model call
        transcript.skipped["synthetic"] += 1
        return False
    return True


def read(text: str) -> Transcript:
    transcript = Transcript(NAME, PROVIDER)
    lines = iter_jsonl(text, transcript)
    chain = _main_chain(lines)
    messages = [x for x in lines if _is_message(x, transcript)]
    on_chain = [x for x in messages if x.get("uuid") in chain]
    responses = {_response_id(x) for x in on_chain if x["type"] == "assistant"}
    # A response's lines may sit on sibling branches; its calls are answered wherever they are.
    calls = {b.get("id") for x in messages if x["type"] == "assistant" and _response_id(x) in responses
             for b in _content(x["message"]) if b.get("type") == "tool_use"}

    def belongs(line: dict[str, Any]) -> bool:
        if line.get("uuid") in chain:
            return True
        if line["type"] == "assistant":
            return _response_id(line) in responses
        blocks = _content(line["message"])
        return bool(blocks) and all(b.get("type") == "tool_result" and b.get("tool_use_id") in calls for b in blocks)

    readable = {id(x) for x in messages}
    builder = AnthropicBuilder(transcript)
    last_response = None
    compacted = False
    seen_results: set[str] = set()
    made_calls: set[str] = set()
    early: list[dict[str, Any]] = []  # result lines written before the line of their call

    def add_results(line: dict[str, Any]) -> None:
        for block in _content(line["message"]):
            if block.get("type") == "tool_result":
                if block.get("tool_use_id") in seen_results:
                    continue
                seen_results.add(block.get("tool_use_id"))
            builder.add("user", block)

    def add_early_results() -> None:
        """Results that arrived before their call join once the call's response is complete."""
        ready = [x for x in early if all(b.get("tool_use_id") in made_calls for b in _content(x["message"]))]
        for x in ready:
            early.remove(x)
            add_results(x)

    for line in lines:
        if line.get("subtype") == "compact_boundary" and line.get("uuid") in chain:
            compacted = True
            builder.split()
            transcript.compactions.append(Compaction(len(transcript.messages), len(transcript.calls)))
            continue
        if line.get("isCompactSummary") and transcript.compactions and isinstance(line.get("message"), dict):
            last = transcript.compactions[-1]
            if last.summary is None and last.index == len(transcript.messages):
                summary = {"role": "user", "content": _content(line["message"])}
                transcript.compactions[-1] = Compaction(last.index, last.calls_before, summary)
            continue
        if id(line) not in readable or not belongs(line):
            continue
        message = line["message"]
        if line["type"] == "assistant":
            blocks = _content(message)
            rid = _response_id(line)
            if rid != last_response and blocks:
                add_early_results()
                builder.start_response(after_host_compaction=compacted)
                last_response = rid
            stamp = line.get("timestamp")
            builder.stamp(iso_seconds(stamp) if isinstance(stamp, str) else None)
            for block in blocks:
                builder.add("assistant", block)
                if block.get("type") == "tool_use":
                    made_calls.add(block.get("id"))
            if blocks:
                builder.set_usage(usage_of_event(PROVIDER, None, message))
                transcript.cache_ttl = _cache_ttl(message) or transcript.cache_ttl
        else:
            add_early_results()
            answers = [b.get("tool_use_id") for b in _content(message) if b.get("type") == "tool_result"]
            if any(a in calls and a not in made_calls for a in answers):
                early.append(line)
                continue
            add_results(line)
    add_early_results()
    transcript.head = {"model": _model(on_chain)} if _model(on_chain) else {}
    if host_kept_thinking(transcript):
        transcript.head.update(keep_all_thinking())
    return transcript


def _cache_ttl(message: dict[str, Any]) -> str | None:
    """The cache lifetime a response's usage reports writing ("1h", "5m"; None: it does not say):
    `usage.cache_creation` splits the written tokens by lifetime."""
    usage = message.get("usage")
    split = usage.get("cache_creation") if isinstance(usage, dict) else None
    if not isinstance(split, dict):
        return None
    return next((ttl for ttl in ("1h", "5m") if (split.get(f"ephemeral_{ttl}_input_tokens") or 0) > 0), None)


def _model(lines: list[dict[str, Any]]) -> str:
    return next((x["message"].get("model") for x in reversed(lines)
                 if x["type"] == "assistant" and isinstance(x["message"].get("model"), str)), "")
