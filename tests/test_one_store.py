"""One CCR store for every face: a marker emitted by the proxy or the CLI in one project expands
through `ctxmill expand` and the MCP `deep_expand` tool from any other project on the machine."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from ctxmill.paths import user_ccr_dir
from tests.conftest import REPO
from tests.test_formats_responses import codex_session
from tests.test_proxy import fake, start_proxy, upstream  # noqa: F401 - fixtures


def project(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    return root


def ctxmill(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CTXMILL_HOME", None)  # each project's own home, found from the working directory
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, timeout=120)


def originals(body: dict) -> dict[str, str]:
    """Each function_call_output's text by call_id."""
    return {i["call_id"]: i["output"] for i in body["input"] if i.get("type", "").endswith("_output")}


def markers(body: dict) -> dict[str, str]:
    """The first marker key in each compressed output, by call_id."""
    out = {}
    for call_id, text in originals(body).items():
        found = find_markers(text)
        if found:
            out[call_id] = found[0].key
    return out


def test_a_key_the_proxy_emitted_expands_from_another_project(fake, start_proxy, tmp_path):
    here, elsewhere = project(tmp_path / "service"), project(tmp_path / "website")
    proxy = start_proxy(home=here / ".ctxmill", compress=CompressConfig(protect_tail_tokens=0, protect_tail_turns=1),
                        chain=None)
    body = codex_session()
    r = httpx.post(proxy.url + "/v1/responses", content=orjson.dumps(body), timeout=60,
                   headers={"content-type": "application/json"})
    assert r.status_code == 200
    keys = markers(fake.received[-1].json())
    assert keys, "the proxy compressed nothing"
    sent = originals(body)
    for call_id, key in keys.items():
        # a stage may store a text an earlier stage already marked: follow the markers down
        expanded, todo = [], [key]
        while todo:
            done = ctxmill("expand", todo.pop(), cwd=elsewhere)
            assert done.returncode == 0, done.stderr
            expanded.append(done.stdout.decode())
            todo += [m.key for m in find_markers(expanded[-1])]
        assert sent[call_id] in expanded
    assert not (here / ".ctxmill" / "ccr").exists()  # nothing in a per-project store any more
    assert (user_ccr_dir() / "ccr.sqlite3").exists()


def test_a_key_the_cli_emitted_expands_through_mcp_in_another_project(tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    here, elsewhere = project(tmp_path / "api"), project(tmp_path / "docs")
    request = here / "request.json"
    request.write_text(json.dumps(codex_session()))
    done = ctxmill("compress", str(request), "-o", str(here / "out.json"), cwd=here)
    assert done.returncode == 0, done.stderr
    keys = list(markers(json.loads((here / "out.json").read_text())).values())
    assert keys
    with CCRStore(user_ccr_dir()) as store:
        texts = {key: store.get(key).text for key in keys}

    async def expand_all() -> dict[str, str]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("CTXMILL_HOME", None)
        params = StdioServerParameters(command=sys.executable, args=["-m", "ctxmill", "mcp"], env=env, cwd=str(elsewhere))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out = {}
            for key in keys:
                result = await session.call_tool("deep_expand", {"key": key})
                assert not result.is_error, result.content
                out[key] = result.content[0].text
            return out

    assert asyncio.run(expand_all()) == texts
    assert ctxmill("expand", keys[0], cwd=elsewhere).stdout.decode() == texts[keys[0]]


def test_an_expired_original_says_what_to_rerun_whichever_store_had_it(tmp_path):
    import time

    here = project(tmp_path / "q")
    with CCRStore(user_ccr_dir()) as store:
        store.put("something else")  # the user store exists and has never seen the key
    with CCRStore(here / ".ctxmill" / "ccr", clock=lambda: time.time() - 2 * 86400) as store:
        key = store.put("old output", hint="re-run the tool call `pytest -q`")
    done = ctxmill("expand", key, cwd=here)
    assert done.returncode == 1 and "has expired" in done.stderr.decode() and "pytest -q" in done.stderr.decode()


@pytest.mark.parametrize("where", ["user", "project", "nowhere"])
def test_expand_reads_the_user_store_then_the_projects_own(tmp_path, where):
    here = project(tmp_path / "p")
    text = f"an original kept in the {where} store\n"
    if where != "nowhere":
        with CCRStore(user_ccr_dir() if where == "user" else here / ".ctxmill" / "ccr") as store:
            key = store.put(text)
    else:
        key = "f" * 32
    done = ctxmill("expand", key, cwd=here)
    if where == "nowhere":
        assert done.returncode == 1 and done.stderr.decode().count("\n") == 1
    else:
        assert (done.returncode, done.stdout.decode()) == (0, text)
