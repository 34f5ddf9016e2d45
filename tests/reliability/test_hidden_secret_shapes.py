"""Secrets whose shape is hidden (a JWT wrapped across lines, `数据库密码：…`, `password：…`, a YAML
`password: |` block, a token split as `"ghp_…" + \\ "…"`) rest nowhere in clear: each shape, in
each store ctxmill writes (the CCR originals, MEMORY.md, checkpoint.raw.json, the history store,
session state and originals in Redis), is searched byte for byte after the face wrote it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compress.runner.pipeline import run
from compress.state.session import Session
from ctxmill.settings import Settings
from tests.chain_checks import OPEN_CONFIG, anthropic_body
from tests.reliability.canaries import CANARIES, Canary, leaked

HIDDEN = ("jwt_wrapped", "cjk_db_password", "fullwidth_colon_password", "yaml_block_password", "github_split_concat")
SHAPES = [c for c in CANARIES if c.name in HIDDEN]
FILLER = "\n".join(f"step {i}: compiled module_{i}.py" for i in range(300))


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    for name in ("CTXMILL_HOME", "CTXMILL_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    home = tmp_path / "proj" / ".ctxmill"
    home.mkdir(parents=True)
    return Settings.load(home)


def _request(canary: Canary) -> dict:
    """The canary in a long tool output (trimmed into CCR), repeated (deduplicated into CCR), in
    a tool input and in the person's text."""
    call = ("Bash", {"command": f"cat .env # {canary.text}"}, f"$ env\n{canary.text}\n{FILLER}\n{canary.text}\n")
    body = anthropic_body([call, call, ("Bash", {"command": "ls"}, "ok")])
    body["messages"][0]["content"] = f"deploy with: {canary.text}"
    return body


def _transcript(path: Path, canary: Canary) -> Path:
    """A Claude Code transcript holding the canary in the person's text, the assistant's text, a
    tool input and a failed tool's output."""
    turn = [("user", {"role": "user", "content": f"We decided to use {canary.text} for prod"}),
            ("assistant", {"id": "m1", "role": "assistant", "content": [
                {"type": "text", "text": f"Decided: keep {canary.text} in .env"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"export X='{canary.text}'"}}]}),
            ("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                                  "content": f"Error: bad credential {canary.text}"}]})]
    lines, parent = [], None
    for i, (kind, message) in enumerate(turn):
        lines.append({"type": kind, "uuid": f"u{i}", "parentUuid": parent, "sessionId": "sess-1", "message": message})
        parent = f"u{i}"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def _files(*roots: Path, named: str = "") -> dict[str, bytes]:
    return {str(p): p.read_bytes() for root in roots for p in root.rglob(f"{named}*") if p.is_file()}


def _assert_nothing_leaked(files: dict[str, bytes]) -> None:
    assert files, "the store wrote nothing"
    assert {name: found for name, data in files.items() if (found := leaked(data))} == {}


@pytest.mark.parametrize("canary", SHAPES, ids=lambda c: c.name)
def test_the_ccr_store_keeps_no_hidden_secret(canary, settings):
    store = settings.open_ccr()
    with Session.open(settings.home / "sessions" / "s") as session:
        result = run(_request(canary), session=session, store=store, config=OPEN_CONFIG)
    store.close()
    assert result.report.ccr_written and not result.report.error
    files = _files(settings.ccr_dir, named="ccr.sqlite3")
    assert any(b"[REDACTED:" in data for data in files.values())
    _assert_nothing_leaked(files | _files(settings.home / "sessions"))


@pytest.mark.parametrize("canary", SHAPES, ids=lambda c: c.name)
def test_memory_md_keeps_no_hidden_secret(canary, settings):
    from memory import api

    api.store(settings.memory, "fact", f"for the prod deploy {canary.text}")
    _assert_nothing_leaked(_files(settings.home, named="MEMORY.md"))


@pytest.mark.parametrize("canary", SHAPES, ids=lambda c: c.name)
def test_checkpoint_raw_json_keeps_no_hidden_secret(canary, settings, tmp_path):
    from memory.checkpoint import RAW_FILE, checkpoint_file

    checkpoint_file(settings.checkpoint, _transcript(tmp_path / "t.jsonl", canary), "sess-1", offer=False)
    files = _files(settings.home, named=RAW_FILE)
    assert any(b"[REDACTED:" in data for data in files.values())
    _assert_nothing_leaked(files | _files(settings.home, named="checkpoint.md"))


@pytest.mark.parametrize("canary", SHAPES, ids=lambda c: c.name)
def test_the_history_store_keeps_no_hidden_secret(canary, settings, tmp_path):
    from memory.history.ingest import ingest_file

    assert ingest_file(settings.history, _transcript(tmp_path / "t.jsonl", canary), str(tmp_path / "proj"),
                       key="sess-1") is not None
    _assert_nothing_leaked(_files(tmp_path / "xdg", settings.home, named="history.sqlite3"))


@pytest.mark.parametrize("canary", SHAPES, ids=lambda c: c.name)
def test_redis_keeps_no_hidden_secret(canary, redis_server):
    from ccr.stores import open_store
    from compress.state.session_store import RedisState
    from ground.redis_client import connect
    from tests.redis_fixture import fresh_address

    address = fresh_address(redis_server)
    client = connect(address)
    try:
        store = open_store(None, address=address, client=client)
        with Session.open(RedisState(client, address.prefix, "s", key=address.key)) as session:
            result = run(_request(canary), session=session, store=store, config=OPEN_CONFIG)
        assert result.report.ccr_written and not result.report.error
        values = {key.decode(): _value(client, key) for key in client.scan_iter(match=address.prefix + "*")}
        assert any(b"[REDACTED:" in data for data in values.values())
        _assert_nothing_leaked(values)
    finally:
        client.close()


def _value(client, key: bytes) -> bytes:
    """Every byte a Redis key holds, whatever its type."""
    kind = client.type(key).decode()
    if kind == "string":
        return client.get(key) or b""
    if kind == "hash":
        return b"\n".join(k + b"=" + v for k, v in client.hgetall(key).items())
    if kind == "list":
        return b"\n".join(client.lrange(key, 0, -1))
    if kind == "set":
        return b"\n".join(client.smembers(key))
    if kind == "zset":
        return b"\n".join(client.zrange(key, 0, -1))
    return b""
