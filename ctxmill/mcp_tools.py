"""The MCP server's tools by name, importing nothing, so `ctxmill --help` and `ctxmill mcp
--help` can list them without the MCP SDK. Must hold: exactly the tools
`ctxmill.mcp_server.build_server` serves (tests/test_faces_e2e.py lists both and compares)."""

TOOLS = ("deep_expand", "memory_search", "memory_store", "memory_forget", "checkpoint",
         "history_search", "history_get")
