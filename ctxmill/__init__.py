"""ctxmill faces: the CLI, hooks, MCP server and proxy. Engines: compress/, ccr/, memory/, ground/.

`settings` builds the one `Settings` object (environment and config.toml) that the faces turn
into the engines' typed configs; `paths` finds the project and global homes; `cli` dispatches to
one module per sub-command in `commands/`; `errors` (CliError, ConfigError) and `logs` (private,
redacted log file) serve every face; `hooks` answers Claude Code hooks, `mcp_server` serves MCP,
`install/` installs both into the clients, `proxy/` is the API proxy (`always_on` starts it for
every session, `keeper` holds its port, `channel` says who may receive requests on a loopback
port), and `anthropic_memory` is Anthropic's memory tool for the SDK. Faces import engines lazily where a process starts per
prompt (hooks, the CLI). Only faces read the environment.
"""


__version__ = "0.1.0"
"""ctxmill's version, the one place it is written (pyproject.toml reads it: `[tool.setuptools.dynamic]`),
so `ctxmill --version` answers without `importlib.metadata` (~20 ms of imports)."""


def package_version() -> str:
    """ctxmill's version: what `ctxmill --version`, the MCP server and the engine report."""
    return __version__
