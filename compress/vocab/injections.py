"""Text the host wrote into a conversation, not the person or the model: tags and notices.

`REMINDER_TAGS` are injected into tool results and messages alike (Claude Code's
`<system-reminder>`); `strip_injections` removes them by default and the nudges ignore them.
`SLASH_COMMAND_TAGS` wrap a slash command's status and output in a user message. A user text block
that opens like a host notice (an interruption, a caveat, a slash command's name) is the host's
as a whole: `person_written` tells what is left of a block for the person.
"""

from __future__ import annotations

import regex

REMINDER_TAGS = ("system-reminder",)
SLASH_COMMAND_TAGS = ("local-command-stdout", "local-command-stderr", "command-message")
INJECTED_TAGS = REMINDER_TAGS + SLASH_COMMAND_TAGS
"""Every tag whose segments in a user message the person did not write."""
_HOST_NOTICE = regex.compile(r"^\s*(?:Caveat: The messages below|\[Request interrupted|<command-name>|<local-command)")


def remove_segments(text: str, tags: tuple[str, ...]) -> tuple[str, int]:
    """Text without closed segments of `tags`, and how many were removed. Linear time."""
    removed = 0
    for tag in tags:
        opener, closer = f"<{tag}>", f"</{tag}>"
        if opener not in text:
            continue
        out: list[str] = []
        pos = 0
        while True:
            start = text.find(opener, pos)
            end = text.find(closer, start) if start >= 0 else -1
            if end < 0:
                break
            out.append(text[pos:start].rstrip(" \t") if start > pos else "")
            pos = end + len(closer)
            removed += 1
        out.append(text[pos:])
        text = "".join(out)
    return text, removed


def person_written(text: str) -> str:
    """What the person wrote in one user text block: '' for a host notice, else the text
    without segments of `INJECTED_TAGS`."""
    if _HOST_NOTICE.match(text):
        return ""
    return remove_segments(text, INJECTED_TAGS)[0]
