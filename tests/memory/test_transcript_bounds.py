"""A transcript line of hundreds of megabytes costs a hook no more than a line of the length limit:
it is read past, never held whole (its start and end are kept when they make valid JSON), and
PreCompact still writes its checkpoint, which says so."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.formats.sessions import KEEP_BYTES, OVERSIZED, _bounded_lines, read_session
from ctxmill.hooks import handle

LINES = [
    {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
     "message": {"role": "user", "content": "Please fix the parser. We must keep Python 3.11 support."}},
    {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s",
     "message": {"id": "m1", "role": "assistant", "content": [
         {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat big.log"}}]}},
    None,  # the tool result: a huge output
    {"type": "assistant", "uuid": "a2", "parentUuid": "u2", "sessionId": "s",
     "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Fixed. Next step: add tests."}]}},
]


def _huge_result(size: int) -> bytes:
    head = json.dumps({"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": "s", "message": {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "X"}]}})
    at = head.index('"X"') + 1
    return head[:at].encode() + b"x" * size + head[at + 1:].encode()


def _write(path: Path, size: int) -> None:
    with path.open("wb") as out:
        for line in LINES:
            out.write(_huge_result(size) if line is None else json.dumps(line).encode())
            out.write(b"\n")


def test_precompact_checkpoints_past_a_line_over_the_limit_without_holding_it(tmp_path, monkeypatch):
    transcript = tmp_path / "t.jsonl"
    _write(transcript, 120 * 2**20)
    home = tmp_path / ".ctxmill"
    monkeypatch.setenv("CTXMILL_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    handle("PreCompact", {"session_id": "s", "transcript_path": str(transcript), "cwd": str(tmp_path),
                          "hook_event_name": "PreCompact", "trigger": "auto"})
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    checkpoint = (home / "checkpoint.md").read_text()
    assert "Please fix the parser" in checkpoint and "add tests" in checkpoint
    assert "1 line(s) of the recording were too long to read whole" in checkpoint
    assert grown_mb < 120  # the 120 MB line was never held whole (peak memory, not time)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12), st.integers(8, 30))
def test_lines_within_the_limit_are_kept_as_they_are_and_longer_ones_counted_and_never_kept_whole(
        tmp_path_factory, lines, limit):
    path = tmp_path_factory.mktemp("r") / "t.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    with path.open("rb") as source:
        read, over = _bounded_lines(source, 10**6, limit, str(path))
    assert len(read) == len(lines) and over == sum(len(line) > limit for line in lines)
    for line, got in zip(lines, read):
        if len(line) <= limit:
            assert got == line + b"\n"
        else:
            assert got == b"\n" or (b"bytes of this line were not read" in got and orjson.loads(got))


def test_a_long_string_is_cut_in_its_middle_and_the_line_stays_valid_json(tmp_path):
    path = tmp_path / "t.jsonl"
    text = "ab\\\"c\u00e9\n" * 50_000
    path.write_bytes(orjson.dumps({"id": "first", "out": text, "uuid": "last"}) + b"\n")
    with path.open("rb") as source:
        [line], over = _bounded_lines(source, 10**8, 100_000, str(path))
    item = orjson.loads(line)
    assert over == 1 and item["id"] == "first" and item["uuid"] == "last" and len(line) < 3 * KEEP_BYTES
    assert "bytes of this line were not read" in item["out"]


def test_read_session_counts_the_unread_line(tmp_path):
    transcript = tmp_path / "t.jsonl"
    _write(transcript, 2000)
    whole = read_session(transcript)
    cut = read_session(transcript, max_line_bytes=1000)
    assert cut.skipped[OVERSIZED] == 1 and whole.skipped[OVERSIZED] == 0
    assert len(cut.messages) == len(whole.messages)  # the cut result still answers its call
