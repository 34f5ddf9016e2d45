"""ctxmill faces: the CLI, hooks, MCP server and proxy. Engines live in compress/, ccr/, memory/."""
