"""Session state holds no secret at rest, and a session reloaded from disk renders every request
byte for byte as the live one did (prompt-cache stability across processes)."""

from __future__ import annotations

import os
import time

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.runner.pipeline import run
from compress.state.sealed import seal, unseal
from compress.state.session import STATE_FILE, Session, prune_sessions
from ground.jsonbytes import dumps
from tests.chain_checks import OPEN_CONFIG, anthropic_body, openai_body
from tests.reliability.canaries import CANARIES, leaked
from tests.reliability.tally import record
from tests.strategies import json_values

canaries = st.sampled_from(CANARIES)
filler = st.integers(0, 120).map(lambda n: "\n".join(f"build step {i}: ok" for i in range(n)))


@st.composite
def leaky_calls(draw) -> list[tuple]:
    """Tool calls whose outputs and inputs carry canaries among ordinary lines; some repeat."""
    calls = []
    for i in range(draw(st.integers(2, 7))):
        secret = draw(canaries)
        head = draw(st.sampled_from(["", "$ env\n", None]))
        before = draw(filler) if head is None else head  # at the top, trimming keeps the secret
        output = before + secret.text + "\n" + draw(filler) + "\n" + draw(filler)
        command = draw(st.sampled_from([f"cat .env.{i}", secret.text, "env"]))
        calls.append(("Bash", {"command": command}, output))
    for _ in range(draw(st.integers(0, 2))):
        calls.insert(draw(st.integers(0, len(calls))), calls[draw(st.integers(0, len(calls) - 1))])
    return calls


def _turns(body: dict) -> list[dict]:
    """The growing requests of one conversation: after each assistant message."""
    messages = body["messages"]
    ends = [i + 2 for i, m in enumerate(messages) if m["role"] == "assistant" and i + 2 <= len(messages)]
    return [{**body, "messages": messages[:end]} for end in ends]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(leaky_calls(), st.sampled_from([anthropic_body, openai_body]))
def test_a_reloaded_session_renders_byte_for_byte_and_its_state_holds_no_secret(tmp_path_factory, calls, shape):
    root = tmp_path_factory.mktemp("s")
    store = CCRStore.in_memory()
    live = Session.memory()
    for request in _turns(shape(calls)):
        expected = run(request, session=live, store=store, config=OPEN_CONFIG)
        with Session.open(root) as disk:
            got = run(request, session=disk, store=store, config=OPEN_CONFIG)
        assert not got.report.error and got.report.mode == expected.report.mode
        assert dumps(got.body) == dumps(expected.body)
        found = leaked((root / STATE_FILE).read_bytes())
        record("secrets", "state.jsonl after each turn of a conversation with canaries (hypothesis)", 1,
               leaked=len(found))
        assert found == [], "a canary is at rest in state.jsonl"
    # A fresh load opens every record of the last request (nothing was left unsealable here).
    assert run(request, session=Session.load(root), store=store, config=OPEN_CONFIG).report.frozen == len(
        request["messages"])


def test_a_secret_kept_in_a_trimmed_output_is_sealed_and_rendered_again_from_the_request(tmp_path):
    canary = next(c for c in CANARIES if c.name == "db_password")
    output = canary.text + "\n" + "\n".join(f"build step {i}: ok" for i in range(400))
    request = anthropic_body([("Bash", {"command": "env"}, output), ("Bash", {"command": "ls"}, "a\nb")])
    store = CCRStore.in_memory()
    with Session.open(tmp_path) as session:
        first = run(request, session=session, store=store, config=OPEN_CONFIG)
    assert canary.secret in dumps(first.body).decode()  # sent upstream as the client sent it
    state = (tmp_path / STATE_FILE).read_bytes()
    assert b'["s","DB_PASSWORD=[REDACTED:password]' in state and leaked(state) == []
    again = run(request, session=Session.load(tmp_path), store=store, config=OPEN_CONFIG)
    assert again.report.mode == "incremental" and dumps(again.body) == dumps(first.body)


def _edits(draw, raw):
    """A rendering derived from `raw` the way stages derive one: some strings cut to a slice
    (which may hold a secret), some replaced, members kept as the same objects."""
    if isinstance(raw, str):
        choice = draw(st.integers(0, 3))
        if choice == 0 and raw:
            a = draw(st.integers(0, len(raw)))
            return raw[:a] + "\n[ctxmill: cut · deep_expand(\"0123456789abcdef0123456789abcdef\")]"
        return raw if choice < 3 else draw(st.text(max_size=20))
    if isinstance(raw, dict):
        return {k: _edits(draw, v) for k, v in raw.items()}
    if isinstance(raw, list):
        return [_edits(draw, v) for v in raw]
    return raw


@settings(max_examples=200, deadline=None)
@given(st.data(), json_values, st.lists(canaries, min_size=1, max_size=3))
def test_seal_and_unseal_are_exact_and_the_sealed_form_holds_no_secret(data, value, planted):
    raw = {"role": "user", "content": [{"type": "text", "text": "\n".join(c.text for c in planted)},
                                       {"type": "other", "value": value}]}
    rendered = _edits(data.draw, raw)
    sealed = seal(rendered, raw)
    if sealed is None:  # only when a secret of the rendering is nowhere in the raw message
        return
    found = leaked(dumps(sealed))
    record("secrets", "sealed renderings of random JSON with canaries cut anywhere (hypothesis)", 1, leaked=len(found))
    assert found == []
    assert dumps(unseal(orjson.loads(dumps(sealed)), raw)) == dumps(rendered)


def test_a_secret_the_rendering_made_up_is_not_sealed():
    raw = {"role": "user", "content": "nothing here"}
    assert seal({"role": "user", "content": CANARIES[0].text}, raw) is None


def test_a_record_that_cannot_be_sealed_is_not_written_and_the_prefix_stops_before_it(tmp_path):
    from compress.state.session import Record

    raw = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    with Session.open(tmp_path) as session:
        session.start_epoch("anthropic", 0, 0, {})
        session.add("h0", Record(raw[0], 1, 1, 0, True, source=raw[0]))
        session.add("h1", Record({"role": "assistant", "content": CANARIES[5].text}, 1, 1, 0, True, source=raw[1]))
    loaded = Session.load(tmp_path)
    assert list(loaded.records) == ["h0"]
    assert leaked((tmp_path / STATE_FILE).read_bytes()) == []


def test_old_sessions_are_pruned_by_age_and_count(tmp_path):
    now = time.time()
    for i in range(6):
        folder = tmp_path / f"s{i}"
        folder.mkdir()
        (folder / STATE_FILE).write_text("{}")
        age = (40 if i == 0 else i) * 86400
        os.utime(folder / STATE_FILE, (now - age, now - age))
        os.utime(folder, (now - age, now - age))
    (tmp_path / "current.json").write_text("{}")
    removed = prune_sessions(tmp_path, max_age_days=30, max_sessions=3, now=now)
    assert sorted(p.name for p in removed) == ["s0", "s4", "s5"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current.json", "s1", "s2", "s3"]


def test_session_start_prunes_old_session_state(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    home = tmp_path / ".ctxmill"
    old, fresh = home / "sessions" / "old", home / "sessions" / "fresh"
    for folder in (old, fresh):
        folder.mkdir(parents=True)
        (folder / STATE_FILE).write_text("{}")
    past = time.time() - 40 * 86400
    for path in (old / STATE_FILE, old):
        os.utime(path, (past, past))
    env = {**os.environ, "PYTHONPATH": str(repo), "CTXMILL_HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    event = json.dumps({"session_id": "s", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path),
                        "hook_event_name": "SessionStart", "source": "startup"})
    done = subprocess.run([sys.executable, "-m", "ctxmill", "hook", "SessionStart"], input=event, text=True,
                          capture_output=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 30  # the hook answers first and prunes in a detached process
    while old.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not old.exists() and fresh.exists()


def test_a_secret_cut_short_is_kept_only_as_a_place_in_the_raw_message():
    """Cut before its `@`, a URL password no longer matches its pattern; cut in the middle, a
    token is no token: what is left of a raw secret is still sealed as a place, not as text."""
    secret = "S3cretPassw0rdQ"
    raw = {"role": "user", "content": [{"type": "text", "text": f"DATABASE_URL=postgres://admin:{secret}@db:5432/app"}]}
    marker = "\n[ctxmill: cut · deep_expand(\"0123456789abcdef0123456789abcdef\")]"
    for cut in (len("DATABASE_URL=postgres://admin:") + len(secret), len("DATABASE_URL=postgres://admin:") + 9):
        text = raw["content"][0]["text"][:cut] + marker
        rendered = {"role": "user", "content": [{"type": "text", "text": text}]}
        sealed = seal(rendered, raw)
        assert sealed is not None and secret[:9] not in dumps(sealed).decode()
        assert dumps(unseal(orjson.loads(dumps(sealed)), raw)) == dumps(rendered)


def test_a_key_block_in_a_json_string_in_a_call_and_its_output_is_sealed(tmp_path):
    """Found by the hypothesis test above: a service-account file (a key block whose lines are
    `\\n` inside a JSON string) as a call's command and in its output, the output trimmed. The
    trimmed key block was located in the raw message only line by real line, so its record
    was not written and the reloaded session rendered the next output differently."""
    canary = next(c for c in CANARIES if c.name == "gcp_service_account")
    filler = "\n".join(f"build step {i}: ok" for i in range(94))
    calls = [("Bash", {"command": canary.text}, canary.text + "\n\n" + filler),
             ("Bash", {"command": "cat .env"}, "AWS_ACCESS_KEY_ID=AKIAPTGZ4JFEBZ9SDO78\n\n" + filler)]
    store, live = CCRStore.in_memory(), Session.memory()
    for request in _turns(anthropic_body(calls)):
        expected = run(request, session=live, store=store, config=OPEN_CONFIG)
        with Session.open(tmp_path) as disk:
            assert dumps(run(request, session=disk, store=store, config=OPEN_CONFIG).body) == dumps(expected.body)
        assert leaked((tmp_path / STATE_FILE).read_bytes()) == []
    assert run(request, session=Session.load(tmp_path), store=store, config=OPEN_CONFIG).report.frozen == len(
        request["messages"])
