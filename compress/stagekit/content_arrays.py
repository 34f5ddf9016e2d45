"""Tool output that arrives as a JSON content array: an MCP tool's result passed on as one string.

Hosts hand an MCP tool's `content` to the model as the JSON of its parts
(`[{"type": "text", "text": "..."}]`, an image part as `{"type": "image", "source": {...}}`), as a
tool result's string or inside a text block. Read as JSON it is one short list, so nothing cut it;
its text is the output. `content_array_text` gives that text, so the stages that cut long output
(decide_on_arrival, crush_json) treat it like any other; the original array goes to CCR first.

What must hold: only a non-empty JSON array whose every item is an object with a known part
`type` (`PART_TYPES`, a string: `{"type": []}` is not one), a text part's `text` a string, is unwrapped; anything else is None. The
text is a pure function of the result: text parts' texts in order, each other part (an image, a
resource) as its JSON on a line of its own, so base64 runs inside it are cut like any other.
"""

from __future__ import annotations

from ground.jsonbytes import dumps, parse_document

PART_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link", "document"})
"""The content part types of MCP tool results (and Anthropic's document part)."""
UNWRAPPED = "the text of a JSON content array, unwrapped"
"""What a marker says before the unwrapped text's own cut."""


def content_array_text(text: str) -> str | None:
    """The text of a tool result that is a JSON content array (module docstring), or None."""
    if not text.lstrip().startswith("[") or '"type"' not in text[:200]:
        return None
    value = parse_document(text)
    if not isinstance(value, list) or not value:
        return None
    out = []
    for part in value:
        if not isinstance(part, dict) or not isinstance(part.get("type"), str) or part["type"] not in PART_TYPES:
            return None
        if part["type"] == "text":
            if not isinstance(part.get("text"), str):
                return None
            out.append(part["text"])
        else:
            out.append(dumps(part).decode())
    return "\n".join(out)
