"""`opencode export` JSON: `{info, messages: [{info: {role}, parts: [...]}]}`.

Each `step-start` … `step-finish` span of an assistant message is one model call; its
`reasoning` parts become thinking blocks, `text` parts text, and each `tool` part a tool_use
whose result (`state.output`, or `state.error` as an error) follows in a user message. A tool
still running when the session was exported has no result and is left unanswered.
"""

from __future__ import annotations

from typing import Any

from compress.formats.sessions import builders as build
from compress.formats.sessions.transcript import Transcript, list_field

NAME = "opencode"
PROVIDER = "anthropic"


def sniff(sample: list[Any]) -> bool:
    return any(isinstance(x, dict) and isinstance(x.get("info"), dict) and isinstance(x.get("messages"), list)
               for x in sample)


def _assistant(builder: build.AnthropicBuilder, parts: list[Any], transcript: Transcript) -> None:
    results: list[dict[str, Any]] = []

    def flush() -> None:
        for block in results:
            builder.add("user", block)
        results.clear()

    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "step-start":
            flush()
            builder.start_response()
        elif kind == "reasoning" and isinstance(part.get("text"), str):
            builder.add("assistant", build.thinking_block(part["text"]))
        elif kind == "text" and isinstance(part.get("text"), str):
            builder.add("assistant", build.text_block(part["text"]))
        elif kind == "tool" and isinstance(part.get("callID"), str) and isinstance(part.get("state"), dict):
            state = part["state"]
            builder.add("assistant", build.tool_use_block(part["callID"], str(part.get("tool", "")), state.get("input")))
            if state.get("status") == "error":
                results.append(build.tool_result_block(part["callID"], build.as_text(state.get("error")), True))
            elif state.get("status") == "completed":
                results.append(build.tool_result_block(part["callID"], build.as_text(state.get("output"))))
        elif kind is None:
            transcript.malformed += 1
        else:
            transcript.skipped[str(kind)] += 1
    flush()


def read_object(data: Any) -> Transcript:
    transcript = Transcript(NAME, PROVIDER)
    builder = build.AnthropicBuilder(transcript)
    for message in list_field(data, "messages", transcript):
        info = message.get("info") if isinstance(message, dict) else None
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(info, dict) or not isinstance(parts, list):
            transcript.malformed += 1
            continue
        if info.get("role") == "assistant":
            if isinstance(info.get("modelID"), str):
                transcript.head["model"] = info["modelID"]
            _assistant(builder, parts, transcript)
            continue
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                if not part.get("ignored"):
                    builder.add("user", build.text_block(part["text"]))
            else:
                transcript.skipped[str(part.get("type") if isinstance(part, dict) else "?")] += 1
    return transcript
