"""Secrets never reach disk: CCR originals, memory, logs; config allow/deny lists; private modes."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.runner.pipeline import run
from compress.state.session import Session
from ctxmill.errors import ConfigError
from ctxmill.settings import Settings
from ground.redact import covered_kinds, redact
from tests.chain_checks import OPEN_CONFIG, anthropic_body
from tests.helpers import strings
from tests.reliability.leaky import SECRETS, leaks, leaky_text

REPO = Path(__file__).resolve().parents[2]


ONLY_DEDUP = frozenset({"decide_on_arrival", "trim_outputs", "crush_json"})
"""These tests are about what dedup_tool_calls writes to CCR; trimming would add markers of its own."""


def repeated_leaky_calls() -> dict:
    """Three identical calls: dedup_tool_calls moves the two earlier outputs into CCR."""
    call = ("Bash", {"command": "env; cat config/*"}, leaky_text())
    return anthropic_body([call, call, call])


def every_stored_text(store_dir: Path) -> bytes:
    """All bytes of the CCR database files (main file, WAL)."""
    return b"".join(p.read_bytes() for p in store_dir.iterdir() if p.name.startswith("ccr.sqlite3"))


def test_ccr_originals_are_redacted_and_markers_resolve_to_what_is_stored(tmp_path):
    store = CCRStore(tmp_path / "ccr")
    config = replace(OPEN_CONFIG, disabled_stages=ONLY_DEDUP)
    result = run(repeated_leaky_calls(), session=Session.memory(), store=store, config=config)
    markers = [m for s in strings(result.body) for m in find_markers(s)]
    assert len(markers) == 2 and result.report.ccr_written == 1
    for marker in markers:
        stored = store.get(marker.key).text
        assert stored == redact(leaky_text()) and not leaks(stored)
    store.close()
    on_disk = every_stored_text(tmp_path / "ccr")
    assert [k for k, s in SECRETS.items() if s.encode() in on_disk] == []
    assert b"[REDACTED:github_token]" in on_disk


def test_config_deny_and_allow_lists_reach_the_ccr_originals(tmp_path, monkeypatch):
    """A project's deny list and the user's allow list (a project's is ignored)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "ctxmill").mkdir(parents=True)
    allow = f'[security]\nredact_allow = ["{SECRETS["aws_access_key"]}"]\n'
    (tmp_path / "config.toml").write_text('[security]\nredact_extra = ["TICKET-[0-9]{5}"]\n' + allow[len("[security]\n"):])
    assert Settings.load(tmp_path).compress.redact_allow == ()
    (tmp_path / "xdg" / "ctxmill" / "config.toml").write_text(allow)
    config = Settings.load(tmp_path).compress
    assert config.redact_extra == ("TICKET-[0-9]{5}",)
    call = ("Bash", {"command": "cat notes"}, leaky_text() + "\nsee TICKET-12345\n")
    store = CCRStore.in_memory()
    body = run(anthropic_body([call, call]), session=Session.memory(), store=store,
               config=CompressConfig(protect_tail_tokens=0, protect_tail_turns=1, disabled_stages=ONLY_DEDUP,
                                     redact_extra=config.redact_extra, redact_allow=config.redact_allow)).body
    (marker,) = [m for s in strings(body) for m in find_markers(s)]
    stored = store.get(marker.key).text
    assert "TICKET-12345" not in stored and "[REDACTED:custom]" in stored
    assert leaks(stored) == ["aws_access_key"]  # allowed: kept on purpose


@pytest.mark.parametrize(("toml", "message"), [
    ('[security]\nredact_extra = ["(unclosed"]\n', "security.redact_extra: bad regex"),
    ('[security]\nredact_allow = "x"\n', "security.redact_allow must be a list of strings"),
    ('[security]\nredact = []\n', "unknown key security.redact"),
])
def test_bad_security_config_is_one_clear_error(tmp_path, monkeypatch, toml, message):
    """In the user's own config.toml (a project's redact_allow is refused: ctxmill.provenance)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "ctxmill").mkdir(parents=True)
    (tmp_path / "xdg" / "ctxmill" / "config.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        Settings.load(tmp_path).redaction


def test_every_covered_kind_is_redacted_in_context():
    out = redact(leaky_text())
    assert leaks(out) == []
    assert {"private_key", "jwt", "aws_access_key", "aws_secret_key", "github_token", "anthropic_key",
            "openai_key", "url_password", "slack_token"} <= set(covered_kinds())


def test_log_records_are_redacted_and_the_log_file_is_private(tmp_path):
    from ctxmill.logs import RedactingFilter, _LazyFileHandler

    path = tmp_path / "a" / "b" / "ctxmill.log"
    handler = _LazyFileHandler(path, delay=True, encoding="utf-8")
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("ctxmill.test_secrets")
    logger.addHandler(handler)
    try:
        logger.warning("upstream said %s", f"bad key {SECRETS['anthropic_key']}")
        try:
            raise ValueError(f"token={SECRETS['github_token']}")
        except ValueError:
            logger.exception("failed with %r", SECRETS["openai_key"])
    finally:
        logger.removeHandler(handler)
        handler.close()
    text = path.read_text()
    assert "upstream said bad key [REDACTED:anthropic_key]" in text and "ValueError" in text
    assert leaks(text) == []
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700 == stat.S_IMODE(path.parent.parent.stat().st_mode)


def cli(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(home), "XDG_DATA_HOME": str(cwd / "xdg")}
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_everything_under_the_home_is_private_and_secret_free(tmp_path):
    """One CLI compress with a session and one memory store: every folder ctxmill created is
    0700, every file 0600, and no secret is readable in any of them, the session state included
    (its renderings are sealed: see tests/reliability/test_session_at_rest.py)."""
    home = tmp_path / "proj" / ".ctxmill"
    request = tmp_path / "request.json"
    request.write_bytes(orjson.dumps(repeated_leaky_calls()))
    (tmp_path / "proj").mkdir()
    done = cli("compress", str(request), "-o", str(tmp_path / "out.json"), "--session", str(home / "sessions" / "s1"),
               home=home, cwd=tmp_path / "proj")
    assert done.returncode == 0, done.stderr
    done = cli("memory", "store", "--type", "fact", f"deploy uses {SECRETS['aws_access_key']}", home=home,
               cwd=tmp_path / "proj")
    assert done.returncode == 0, done.stderr
    assert cli("memory", "search", "deploy", home=home, cwd=tmp_path / "proj").returncode == 0
    seen = 0
    for path in [home, *home.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path.relative_to(tmp_path)} is {mode:o}"
        if path.is_file():
            seen += 1
            assert leaks(path.read_bytes().decode("utf-8", "replace")) == [], path
    assert seen >= 4  # ccr.sqlite3, state.jsonl, MEMORY.md, the index


def test_ccr_keys_that_are_paths_are_refused(tmp_path):
    store = CCRStore(tmp_path)
    for bad in ("../../etc/passwd", "/etc/passwd", "0" * 31 + "/", "%2e%2e%2f" + "0" * 23, "A" * 32, "0" * 33):
        assert store.get(bad).status == "invalid"
    store.close()
    done = cli("expand", "../../../etc/passwd", home=tmp_path, cwd=tmp_path)
    assert done.returncode == 2 and "not a CCR key" in done.stderr and "root:" not in done.stdout


def test_every_logger_is_redacted_once_the_cli_configured_logging(tmp_path, monkeypatch):
    """uvicorn's and any library's records too, not only ctxmill's file handler."""
    from ctxmill.logs import redact_every_record

    before = logging.getLogRecordFactory()
    try:
        redact_every_record()
        redact_every_record()  # idempotent: one wrapper
        record = logging.getLogger("uvicorn.error").makeRecord(
            "uvicorn.error", logging.ERROR, __file__, 1, "request failed: %s", (f"x-api-key: {SECRETS['anthropic_key']}",),
            None)
        assert record.getMessage() == "request failed: x-api-key: [REDACTED:anthropic_key]"
    finally:
        logging.setLogRecordFactory(before)
