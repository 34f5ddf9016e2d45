"""What docs/always-on.md says Claude Code sends is what it sends: the number of tool definitions
in a request with the ctxmill MCP server, with tool search on (as install sets it) and off."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from ctxmill.mcp_tools import TOOLS
from tests.e2e.scenarios import claude_code as scenario_for
from tests.e2e.test_e2e_claude_code import run_claude

pytestmark = pytest.mark.e2e
DOC = Path(__file__).resolve().parents[2] / "docs" / "always-on.md"
SAID = re.compile(
    r"With tool search on, Claude Code ([\d.]+) sends (\d+) tool\s+definitions"
    r".*?ctxmill MCP server's (\d+) tools wait behind `ToolSearch`;"
    r"\s+with it off it sends"
    r" (\d+) \(its own (\d+), ctxmill's (\d+) and (\d+) for MCP resources\)",
    re.S,
)


def test_the_tools_claude_code_sends_are_the_ones_the_docs_count(
    claude_code, project, home, serve, tmp_path
):
    found = SAID.search(DOC.read_text())
    assert found, "docs/always-on.md no longer states the tool counts this test checks"
    version, on, mcp, off, own, ctxmill, resources = found.groups()
    assert int(mcp) == int(ctxmill) == len(TOOLS)
    assert int(off) == int(own) + int(ctxmill) + int(resources)
    config = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": ["-m", "ctxmill", "mcp"]}
    config.write_text(json.dumps({"mcpServers": {"ctxmill": server}}))
    scenario = scenario_for(project)
    counts = {}
    for search in ("true", "false"):
        srv = serve(scenario.script)
        res = run_claude(
            claude_code,
            project,
            home,
            srv.url,
            scenario.prompt,
            "--mcp-config",
            str(config),
            ENABLE_TOOL_SEARCH=search,
        )
        assert res.returncode == 0, res.describe()
        first = next(r for r in srv.standin.model_calls() if r.body.get("tools"))
        counts[search] = sorted(t["name"] for t in first.body["tools"])
    assert claude_code.version.split()[0] == version
    assert len(counts["true"]) == int(on) and "ToolSearch" in counts["true"]
    assert not any(name.startswith("mcp__ctxmill__") for name in counts["true"])  # deferred
    assert len(counts["false"]) == int(off)
    served = sorted(n for n in counts["false"] if n.startswith("mcp__ctxmill__"))
    assert served == sorted(f"mcp__ctxmill__{t}" for t in TOOLS)
