"""SWE-agent trajectories (`.traj` JSON with `history`, `trajectory`, `info`).

Function-calling runs keep `history` in OpenAI Chat shape (`tool_calls`, `role: "tool"` with
`tool_call_ids`): read as is. Other runs write the action inside the assistant text and the
observation as the next user message; they are read as tool calls too, so the pipeline sees
observations as tool results: the assistant's `thought` stays its text, its `action` becomes
a call of the command it names (SWE-agent commands such as `open` or `search_dir` by name,
anything else `bash`), and the following user message its result. Demonstration messages
(`is_demo`) are part of the prompt and kept.
"""

from __future__ import annotations

from typing import Any

import orjson

from compress.formats.sessions.builders import OpenAIChatBuilder, as_text
from compress.formats.sessions.transcript import Transcript, list_field

NAME = "swe-agent"
PROVIDER = "openai"
COMMANDS = frozenset({"open", "goto", "scroll_up", "scroll_down", "create", "edit", "search_dir", "search_file",
                      "find_file", "submit", "str_replace_editor", "insert", "filemap"})


def sniff(sample: list[Any]) -> bool:
    return any(isinstance(x, dict) and isinstance(x.get("history"), list) for x in sample)


def _content(msg: dict[str, Any]) -> str:
    return as_text(msg.get("content"))


def _command(action: str) -> tuple[str, str]:
    """(tool name, arguments JSON) for a non-function-calling action."""
    first = action.strip().split(maxsplit=1)[0] if action.strip() else ""
    name = first if first in COMMANDS else "bash"
    return name, orjson.dumps({"command": action.strip()}).decode()


def read_object(data: Any) -> Transcript:
    transcript = Transcript(NAME, PROVIDER)
    builder = OpenAIChatBuilder(transcript)
    pending: str | None = None  # id of a synthesized call waiting for its observation
    for i, msg in enumerate(list_field(data, "history", transcript)):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role is None:
            transcript.malformed += 1
            continue
        if role == "assistant" and isinstance(msg.get("tool_calls"), list):
            builder.assistant_text(_content(msg))
            for call in msg["tool_calls"]:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(call.get("id"), str):
                    transcript.malformed += 1
                    continue
                arguments = function.get("arguments")
                builder.tool_call(call["id"], str(function.get("name", "")),
                                  arguments if isinstance(arguments, str) else as_text(arguments))
        elif role == "tool":
            ids = msg.get("tool_call_ids") or [msg.get("tool_call_id")]
            for call_id in ids:
                if isinstance(call_id, str):
                    builder.tool_result(call_id, _content(msg))
        elif role == "assistant":
            action = msg.get("action")
            if isinstance(action, str) and action.strip():
                thought = msg.get("thought")
                builder.assistant_text(thought if isinstance(thought, str) else _content(msg))
                pending = f"swe-{i}"
                builder.tool_call(pending, *_command(action))
            else:
                builder.assistant_text(_content(msg))
        elif role == "user" and pending is not None:
            builder.tool_result(pending, _content(msg))
            pending = None
        elif role in ("user", "system"):
            builder.message(role, _content(msg))
        else:
            transcript.skipped[str(role)] += 1
    return transcript
