"""Every face writes the savings ledger: the proxy (per answered request, with the provider's usage,
its project read from the request), `ctxmill compress`, the OpenCode engine, and expansions
through `ctxmill expand` and the MCP server's deep_expand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio

from ctxmill.ledger.report import summary
from ctxmill.ledger.store import Ledger
from tests.helpers import eventually
from tests.proxy_fixtures import fake, start_proxy, upstream  # noqa: F401 - fixtures
from tests.proxy_helpers import anthropic_client, example, replay

REPO = Path(__file__).resolve().parents[1]


def scripted_session(
    url: str,
    fake,
    folder: str = "/home/dev/shop-app",
    user_id: str = "user_1",
    headers: dict | None = None,
) -> int:
    """Play the example conversation through the proxy at `url` as Claude Code would (its system
    prompt names the working directory; `headers` go with every request); returns the number of
    requests sent."""
    body = example()
    system = body["system"] + [{"type": "text", "text": f"<env>\nWorking directory: {folder}\n</env>"}]
    client, _ = anthropic_client(url)
    sent = 0

    def send(history: list[dict], reply: dict) -> dict:
        nonlocal sent
        fake.replies.append(reply)
        sent += 1
        message = client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=512,
            system=system,
            messages=list(history),
            metadata={"user_id": user_id},
            extra_headers=headers or {},
        )
        return {"role": "assistant", "content": [b.model_dump(exclude_none=True, include={
            "type", "text", "thinking", "signature", "id", "name", "input"}) for b in message.content]}

    replay(body["messages"], lambda m: m["role"] == "assistant", send)
    return sent


def ledger_summary(path: Path) -> dict:
    with Ledger.open(path) as ledger:
        return summary(ledger)


def test_the_proxy_adds_each_answered_request_with_usage_project_and_stages(fake, start_proxy, tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    proxy = start_proxy(home=tmp_path / "home", ledger_file=ledger, ccr_dir=tmp_path / "ccr")
    sent = scripted_session(proxy.url, fake)
    eventually(lambda: ledger.exists() and ledger_summary(ledger)["totals"]["requests"] == sent)
    data = ledger_summary(ledger)
    stats = json.loads(__import__("httpx").get(proxy.url + "/ctxmill/stats").text)
    [session] = stats["sessions"]
    t = data["totals"]
    assert (t["tokens_before"], t["tokens_after"]) == (session["tokens_before"], session["tokens_after"])
    assert t["tokens_saved"] > 0 and t["cost_saved"] > 0 and t["sessions"] == 1
    assert [p["project"] for p in data["projects"]] == ["shop-app"]
    assert data["sessions"][0]["session"] == session["session"]
    assert data["sessions"][0]["model"] == "claude-sonnet-4-6"
    assert 0 < sum(s["tokens"] for s in data["stages"]) <= t["tokens_saved"]  # each cut counted once, when made
    assert (
        sum(s["tokens"] for s in data["saved_by_stage"]) == t["tokens_saved"]
    )  # the bars add up to the headline
    assert sum(k["tokens"] for k in data["saved_by_kind"]) == t["tokens_saved"]
    with Ledger.open(ledger) as db:
        [row] = db.query("SELECT SUM(reported) AS n, MIN(priced_as) AS p FROM requests")
    assert row == {"n": sent, "p": "claude-sonnet-4-6"}


def test_the_proxy_records_the_session_id_the_client_names(fake, start_proxy, tmp_path):
    ledger = tmp_path / "ledger.sqlite3"
    proxy = start_proxy(home=tmp_path / "home", ledger_file=ledger, ccr_dir=tmp_path / "ccr")
    claude_code = (
        "ab363f54-381f-47b8-a43b-67d636010a2f"  # Claude Code 2.1.332's X-Claude-Code-Session-Id
    )
    sent = scripted_session(proxy.url, fake, headers={"X-Claude-Code-Session-Id": claude_code})
    not_an_id = {"session-id": "no id; " + "x" * 200}  # recorded under the proxy's key instead
    sent += scripted_session(proxy.url, fake, "/home/dev/other", "user_2", headers=not_an_id)
    eventually(lambda: ledger.exists() and ledger_summary(ledger)["totals"]["requests"] == sent)
    stats = json.loads(__import__("httpx").get(proxy.url + "/ctxmill/stats").text)
    keys = {s["session"] for s in stats["sessions"]}
    recorded = {s["session"] for s in ledger_summary(ledger)["sessions"]}
    assert len(keys) == 2 and claude_code not in keys  # the proxy keys its own state as before
    assert (
        claude_code in recorded
        and len(recorded - {claude_code}) == 1
        and recorded - {claude_code} <= keys
    )


def test_an_in_memory_proxy_writes_no_ledger(fake, start_proxy, tmp_path):
    proxy = start_proxy(ledger_file=tmp_path / "ledger.sqlite3")  # persist=False
    scripted_session(proxy.url, fake)
    assert not (tmp_path / "ledger.sqlite3").exists()


def _cli(*args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], capture_output=True, text=True, env=env, cwd=cwd)


def test_cli_compress_and_expand_write_the_ledger(tmp_path):
    project = tmp_path / "cli-project"
    (project / ".git").mkdir(parents=True)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg"), "PYTHONPATH": str(REPO)}
    env.pop("CTXMILL_HOME", None)
    body = {**example(), "model": "gpt-5-mini"}
    (project / "req.json").write_text(json.dumps(body))
    out = _cli("compress", "req.json", "-o", "out.json", "--json", env=env, cwd=project)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stderr)
    data = ledger_summary(tmp_path / "xdg" / "ctxmill" / "ledger.sqlite3")
    assert (data["totals"]["tokens_before"], data["totals"]["tokens_after"]) == (report["tokens_before"],
                                                                               report["tokens_after"])
    assert data["sessions"][0]["session"] == "cli" and data["projects"][0]["project"] == "cli-project"
    ledger = tmp_path / "xdg" / "ctxmill" / "ledger.sqlite3"
    again = _cli("compress", "req.json", "-o", "out.json", env=env, cwd=project)  # the same request
    assert again.returncode == 0, again.stderr
    assert ledger_summary(ledger)["totals"]["requests"] == 1  # counted once
    (project / "other.json").write_text(json.dumps({**body, "model": "gpt-5"}))
    assert _cli("compress", "other.json", "-o", "out2.json", env=env, cwd=project).returncode == 0
    assert ledger_summary(ledger)["totals"]["requests"] == 2
    key = json.dumps(json.loads((project / "out.json").read_text())).split('deep_expand(\\"')[1][:32]
    assert _cli("expand", key, env=env, cwd=project).returncode == 0
    assert _cli("expand", "0" * 32, env=env, cwd=project).returncode == 1  # unknown: not an expansion
    data = ledger_summary(tmp_path / "xdg" / "ctxmill" / "ledger.sqlite3")
    assert data["totals"]["expansions"] == 1 and data["projects"][0]["expansions"] == 1


def test_the_opencode_engine_writes_the_ledger(tmp_path, monkeypatch):
    from ctxmill.engine.opencode import OpenCodeEngine
    from tests.test_opencode_engine import prompt, step

    monkeypatch.delenv("CTXMILL_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    project = tmp_path / "oc-project"
    (project / ".git").mkdir(parents=True)
    engine = OpenCodeEngine()
    messages = [prompt("Please fix the failing build")] + [step(n) for n in range(5)]
    result = engine.transform({"directory": str(project), "sessionID": "ses_1", "messages": messages,
                               "model": "anthropic/claude-haiku-4-5"})
    engine.close()
    assert result["edits"]
    data = ledger_summary(tmp_path / "xdg" / "ctxmill" / "ledger.sqlite3")
    [s] = data["sessions"]
    assert (s["session"], s["face"], s["project"], s["model"]) == ("ses_1", "opencode", "oc-project",
                                                                  "anthropic/claude-haiku-4-5")
    assert s["tokens_saved"] > 0 and data["stages"]
    assert (project / ".ctxmill" / ".gitignore").exists()  # its first turn made the home


def test_mcp_deep_expand_records_an_expansion(tmp_path, monkeypatch):
    from ccr.store import CCRStore
    from ctxmill.mcp_server import build_server
    from ctxmill.settings import Settings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    settings = Settings.load(tmp_path / ".ctxmill")
    with CCRStore(settings.ccr_dir) as store:
        key = store.put("the original text\n" * 20)
    server = build_server(settings)

    async def call() -> None:
        await server.call_tool("deep_expand", {"key": key})

    anyio.run(call)
    data = ledger_summary(tmp_path / "xdg" / "ctxmill" / "ledger.sqlite3")
    assert data["totals"]["expansions"] == 1 and data["totals"]["requests"] == 0


def test_the_litellm_guardrail_writes_the_ledger(tmp_path, monkeypatch):
    """A routed request is recorded with its project and tokens; a failed run saved nothing."""
    import pytest

    pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install -e '.[litellm]')")
    from compress.formats.usage import Usage
    from ctxmill.ledger.batch import FileSink, LedgerWriter
    from ctxmill.litellm_guardrail import Routed, row
    from ctxmill.proxy.stats import RunSummary

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    ledger = LedgerWriter(FileSink(tmp_path / "xdg" / "ctxmill" / "ledger.sqlite3"))
    ledger.add(row(Routed("s1", "anthropic", RunSummary(b"{}", 1000, 400, model="claude-sonnet-4-5"),
                          "/home/dev/shop-app", 4000), Usage(input=380, output=20)))
    ledger.add(row(Routed("s2", "openai_chat", RunSummary(None, 800, 0, error="boom", model="gpt-5"), None, 3200), None))
    ledger.close()
    data = ledger_summary(tmp_path / "xdg" / "ctxmill" / "ledger.sqlite3")
    assert (data["totals"]["tokens_before"], data["totals"]["tokens_after"]) == (1800, 1200)
    assert {p["project"] for p in data["projects"]} >= {"shop-app"}
