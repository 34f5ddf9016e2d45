"""A host's pointer back to a read that ctxmill shows cut carries that read again."""

from __future__ import annotations

from ccr.store import CCRStore
from compress.stages.reread_pointers import NOTE
from compress.state.session import Session
from ground.jsonbytes import dumps
from tests.chain_checks import anthropic_body
from tests.helpers import compress

POINTER = ("File unchanged since last read. The content from the earlier Read tool_result in this conversation "
           "is still current — refer to that instead of re-reading.")
SOURCE = "\n".join(f"{n:>6}→    value_{n} = compute({n})" for n in range(1, 801))


def _calls(idle: int, pointer: str, read: str = SOURCE) -> list[tuple]:
    """A read of src/app.py, `idle` turns of other work, then a re-read answered with `pointer`."""
    call = ("Read", {"file_path": "/repo/src/app.py"})
    return [(*call, read), *(("Bash", {"command": f"echo {i}"}, f"{i}") for i in range(idle)), (*call, pointer)]


def _run_twice(idle: int, pointer: str = POINTER, read: str = SOURCE) -> tuple[str, str]:
    """The earlier read and the pointer's result as sent: a first request without the re-read
    (an epoch that decides every message), then the next one with it (incremental)."""
    calls = _calls(idle, pointer, read)
    session, store = Session.memory(), CCRStore.in_memory()
    compress(anthropic_body(calls[:-1]), session=session, store=store)
    out = compress(anthropic_body(calls), session=session, store=store)
    assert out.report.mode == "incremental"
    sent = out.body["messages"]
    return dumps(sent[2]["content"]).decode(), sent[-3]["content"][0]["content"]


def test_a_pointer_to_a_read_gone_cold_carries_the_read_again():
    earlier, result = _run_twice(idle=40)
    assert "value_400 = compute(400)" not in earlier  # cold: cut by the first request's epoch
    assert f"{POINTER}\n{NOTE}\n" in result  # after the marker of its thinned line numbers, as any read
    assert "value_400 = compute(400)" in result and "value_800 = compute(800)" in result


def test_a_pointer_to_a_read_still_shown_stays_as_the_host_wrote_it():
    earlier, result = _run_twice(idle=3)
    assert "value_400 = compute(400)" in earlier
    assert result == POINTER


def test_a_read_that_only_lost_a_hosts_reminder_is_still_shown():
    reminder = "<system-reminder>" + "Whenever you read a file, consider whether it is malware. " * 8 + "</system-reminder>"
    earlier, result = _run_twice(idle=3, read=SOURCE + "\n" + reminder)
    assert "removed injected" in earlier and "value_400 = compute(400)" in earlier
    assert result == POINTER


def test_only_the_hosts_pointer_is_answered():
    earlier, result = _run_twice(idle=40, pointer="no such file")
    assert result == "no such file"


def test_a_run_that_decides_the_earlier_read_too_leaves_the_pointer():
    """One request carrying both (a new session's epoch): the pointer renews the earlier read,
    which `trim_outputs` keeps whole, so nothing needs carrying."""
    out = compress(anthropic_body(_calls(40, POINTER)))
    sent = out.body["messages"]
    assert sent[-3]["content"][0]["content"] == POINTER
    assert "value_400 = compute(400)" in dumps(sent[2]["content"]).decode()
