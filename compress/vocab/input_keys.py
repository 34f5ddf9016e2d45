"""The input keys of the hosts' file and edit tools: which key names the file, holds a patch,
the text written or the text replaced. Apart from `compress.vocab.tools` (which imports them
for its own rules and keeps them in its namespace, where the stages import them), so a prompt's
hook reads `PATH_KEYS` without building the tools' kinds, actions and path rules."""

from __future__ import annotations

PATH_KEYS = ("file_path", "filePath", "notebook_path", "path", "filename", "target_file")
"""Input keys of file tools that name the file (the first present one is used)."""
PATCH_KEYS = ("patch", "patchText", "patch_text", "input", "diff")
"""Input keys of patch tools that hold the patch body (the first present one is used)."""

ECHOED_KEYS = frozenset({"content", "file_text", "new_string", "newString", "new_str"})
"""Input keys of written texts a host may show again, numbered, in the call's result (Claude Code
up to 2.1.39 answers a Write over an existing file with the whole file, an Edit with the edited
region)."""
WRITTEN_KEYS = (*sorted(ECHOED_KEYS), "new_source")
"""Input keys of the texts file tools write: `ECHOED_KEYS` and NotebookEdit's `new_source`."""
OLD_TEXT_KEYS = ("old_string", "oldString", "old_str")
"""Input keys of edit calls that hold the text being replaced, which the model copies out of
its context (Claude Code Edit / MultiEdit `edits[]`, OpenCode edit, str_replace editors)."""
