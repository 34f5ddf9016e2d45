"""Text the host wrote into a conversation, not the person or the model: tags and notices.

`REMINDER_TAGS` are injected into tool results and messages alike (Claude Code's
`<system-reminder>`); `strip_injections` removes them by default and the nudges ignore them.
`SLASH_COMMAND_TAGS` wrap a slash command's status and output in a user message. A user text block
that opens like a host notice (an interruption, a caveat, a slash command's name, a background task's
notification, the summary that continues a compacted conversation, an image placeholder) is the
host's as a whole: `person_written` tells what is left of a block for the person.

The host also answers tool calls for the person: `refusal` reads a result saying the person
refused the call (or the host blocked it), with the reason the person gave; `answers` reads the
person's answers to the agent's questions (AskUserQuestion, OpenCode's `question`).
"""

from __future__ import annotations

import regex

COMPACTION_SUMMARY_OPENING = "This session is being continued from a previous conversation"
"""How Claude Code's summary of a compacted conversation opens: the first message of the history
the host sends after compacting (readers without a recorded boundary find compactions by it)."""
REMINDER_TAGS = ("system-reminder",)
SLASH_COMMAND_TAGS = ("local-command-stdout", "local-command-stderr", "command-message")
INJECTED_TAGS = REMINDER_TAGS + SLASH_COMMAND_TAGS
"""Every tag whose segments in a user message the person did not write."""
_HOST_NOTICE = regex.compile(
    r"""^\s*(?:Caveat:\ The\ messages\ below|\[Request\ interrupted|<command-name>|<local-command|<task-notification>
    |<system-reminder>|<user-prompt-submit-hook>|""" + regex.escape(COMPACTION_SUMMARY_OPENING) + r"""
    |\[Image[:\ \#\]]|<turn_aborted>)""", regex.VERBOSE)
_NOTICE_TAGS = INJECTED_TAGS + ("task-notification", "user-prompt-submit-hook", "environment_context", "user_instructions",
                                "INSTRUCTIONS")
"""Also removed from what the person wrote (the stages keep these: they are not reminders). Codex
sends the workspace (`<environment_context>`) and AGENTS.md (`# AGENTS.md instructions for …`
then `<INSTRUCTIONS>`) in the person's message."""
_AGENTS_HEADING = regex.compile(r"^\s*# AGENTS\.md instructions for [^\n]*\n?")
_NOTIFICATION_TAIL = regex.compile(r"^\s*Read the output file to retrieve the result:.*$", regex.MULTILINE)
_REFUSED = regex.compile(
    r"""(?ix)^\s*(?:<tool_use_error>\s*)?(?:The\ user\ doesn't\ want\ to\ proceed\ with\ this\ tool\ use
    |The\ tool\ use\ was\ rejected|User\ rejected|The\ user\ rejected|Permission\ to\ use\ \S+\ (?:has\ been|was)\ denied
    |\S+\ command\ blocked:|\[Request\ interrupted\ by\ user)""")
_REFUSAL_REASON = regex.compile(r"(?is)reason for the rejection:\s*(.+?)\s*$")
_ANSWERED = regex.compile(r"(?i)^\s*(?:User has answered your questions?|Your questions have been answered):")
_ANSWER_PAIR = regex.compile(r'"([^"]{1,400})"="([^"]{1,400})"')


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
    without injected segments (reminders, slash-command output, task notifications)."""
    if _HOST_NOTICE.match(text):
        return ""
    text = remove_segments(text, _NOTICE_TAGS)[0]
    if text.lstrip().startswith("# AGENTS.md"):
        text = _AGENTS_HEADING.sub("", text, count=1)
    return _NOTIFICATION_TAIL.sub("", text) if "Read the output file" in text else text


def refusal(result: str) -> tuple[bool, str]:
    """(the tool call was refused by the person or blocked by the host, the person's reason or '')."""
    if not _REFUSED.match(result[:300]):
        return False, ""
    reason = _REFUSAL_REASON.search(result)
    return True, " ".join(reason.group(1).split()) if reason else ""


def answers(result: str) -> list[tuple[str, str]]:
    """The person's (question, answer) pairs when a tool result carries their answers, else []."""
    return _ANSWER_PAIR.findall(result) if _ANSWERED.match(result[:200]) else []
