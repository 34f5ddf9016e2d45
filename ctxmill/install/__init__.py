"""What `ctxmill install CLIENT` and `ctxmill uninstall CLIENT` write into each client, and undo.

- `claude_code`: Claude Code's hooks, MCP server, slash commands and always-on `env`; also what
  every installer shares (`Change`, the manifest of created files, the slash-command pages);
- `codex`: Codex's MCP server and model provider (`config.toml`, edited by `toml_files`);
- `opencode`: OpenCode's plugin, MCP server and slash commands (JSONC config);
- `backups`: a client file is backed up before ctxmill first changes it, and put back byte for byte;
- `launch`: the command the installed hooks, MCP server and commands run;
- `git_memory`: the git merge driver for a project's memory files (`--project`).

Must hold: only `ctxmill.commands` imports this package (a hook, the MCP server or the proxy
never loads an installer), and it imports no serving face (`tests/test_layering.py`);
installing twice equals installing once; uninstall removes exactly what install added.
"""
