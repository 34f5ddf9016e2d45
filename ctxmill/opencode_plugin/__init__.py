"""The OpenCode plugin ctxmill ships (`ctxmill.js`, plain JavaScript: OpenCode runs it with Bun).

`ctxmill install opencode` copies it into OpenCode's plugins folder. Its
`experimental.chat.messages.transform` hook sends each turn's messages to the engine
(`ctxmill engine`, started on demand, see `ctxmill.engine`) and applies the edits it gets back;
its `experimental.session.compacting` hook has the engine write a checkpoint and adds it, with the
person's first request, to OpenCode's summary prompt. It fails open: no engine, an error or no
answer within its time budget, and the messages go out unchanged.
"""

from pathlib import Path

PLUGIN = Path(__file__).with_name("ctxmill.js")
MARK = "ctxmill-opencode-plugin"
"""Written in the plugin's first line: install and uninstall recognise their own file by it."""
