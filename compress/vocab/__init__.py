"""The hosts' vocabulary, in one place for the stages, the replay and memory alike.

- `tools`: tool names -> kinds (`tool_kind`), file tools and their actions, protected tools,
  memory tools, the `mcp__` name rule (`base_name`), a call's shell command (`command_of`).
- `input_keys`: the tools' input keys that name a file, hold a patch, a written or a replaced text.
- `touches`: what a call does to one file (`FileTouch`, the actions), path rules, apply_patch bodies.
- `shell`: which files a shell command touches, and its heredocs.
- `calls`: `touched_files(tool, input)` for any call, and `rerun_hint` for CCR's "expired" message.
- `signals/`: errors in tool output (`errors`), the cues of decisions, constraints, fixes, next
  steps and critical notes in prose (`cues`), and the checkpoint's reading of a sentence
  (`statements`), English and Chinese.
- `injections`: tags and notices the host writes into a conversation, and their removal.

Imports nothing of the project outside `compress.model` (for `signals.errors.is_failed_result`).
"""
