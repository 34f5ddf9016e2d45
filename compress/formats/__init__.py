"""Everything that knows a provider's or a recording's format; the rest sees the canonical model.

- `requests/`: provider request shapes (Anthropic Messages, OpenAI Chat Completions) <->
  `compress.model.Request`; `detect(body)` names a body's shape. One module per shape, listed in
  `requests.SHAPES`.
- `sessions/`: recorded agent sessions (Claude Code, Codex, opencode, …) -> `Transcript`, a
  list of messages in one of those shapes. One module per format, listed in `sessions.FORMATS`.
- `usage.py`: provider-reported token usage (`Usage`), read from responses and recordings.
"""
