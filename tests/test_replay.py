"""The replay: accounting (thinking rule), retention, usage check, CLI and the corpus (that the
engine never imports it: tests/test_layering.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ccr.markers import format_marker
from ccr.store import CCRStore
from compress.formats.sessions import read_session, read_text
from compress.token_counters import get_counter
from replay.pricing import RequestAccountant
from replay.retention import check_retention
from replay.runner import replay
from tests.conftest import CORPUS

ROOT = Path(__file__).resolve().parents[1]
COUNTER = get_counter(prefer_exact=True)
THOUGHT = "I should look at the parser module first because the stack trace points there."


def _session(turns: int, result_chars: int = 400) -> dict:
    messages: list = [{"role": "user", "content": "please fix the failing build"}]
    for i in range(turns):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"step {i}"},
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"make {i}"}}]})
        output = "ok line\n" * (result_chars // 8) + f"error: build {i} failed at src/mod{i}.c\n"
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": output, "is_error": i % 3 == 0}]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "fixed"}]})
    return {"model": "claude-x", "messages": messages}


def test_thinking_counts_only_in_the_latest_assistant_turn():
    during = {"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": THOUGHT, "signature": ""},
                                          {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}]}
    after = {"messages": [*during["messages"], {"role": "assistant", "content": "done"},
                          {"role": "user", "content": "next"}]}
    without = {"messages": [*during["messages"][:1],
                            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
                            *during["messages"][2:]]}
    tokens = lambda body: RequestAccountant("anthropic", COUNTER).add(body).tokens  # noqa: E731
    assert tokens(during) - tokens(without) == COUNTER.count(THOUGHT)
    # a new user message completes the turn: its thinking no longer counts
    grown = tokens(after) - tokens(during)
    added = tokens({"messages": [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]})
    assert grown == added - COUNTER.count(THOUGHT)


def test_unchanged_session_costs_the_same_as_raw():
    t = read_text(json.dumps(_session(6)))
    report = replay(t)
    assert report.requests == 8  # before each of the 7 assistant messages, then the whole body
    assert report.compressed.tokens_sum <= report.raw.tokens_sum
    assert report.raw.cache_read > 0 and report.raw.cache_write > 0
    assert report.raw.tokens_peak == max(RequestAccountant("anthropic", COUNTER).add(t.request(k)).tokens
                                         for k in range(len(t.calls)))
    assert report.retention.fraction("recoverable") == 1.0
    assert report.retention.errors.total == 2 and report.retention.last_request.total == 1
    assert report.counter == COUNTER.name


def test_retention_sees_visible_recoverable_and_lost_items():
    raw = _session(3)
    store = CCRStore.in_memory()
    first = raw["messages"][2]["content"][0]["content"]
    key = store.put(first)
    compressed = json.loads(json.dumps(raw))
    compressed["messages"][2]["content"][0]["content"] = format_marker("build log", key)
    compressed["messages"][4]["content"][0]["content"] = "gone"
    ret = check_retention(raw, compressed, store)
    assert ret.errors.total == 1  # only result 0 is flagged (i % 3 == 0)
    assert (ret.errors.visible, ret.errors.recoverable) == (0, 1)
    assert ret.fraction("recoverable") == 1.0 and ret.fraction("visible") < 1.0
    # a result text that is lost entirely is reported as missing
    raw["messages"][4]["content"][0]["is_error"] = True
    ret = check_retention(raw, compressed, store)
    assert ret.errors.recoverable == 1 and ret.errors.total == 2
    assert any("build 1 failed" in m for m in ret.missing)


def test_written_paths_are_checked():
    body = {"messages": [
        {"role": "user", "content": "write it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "w", "name": "Write",
                                           "input": {"file_path": "/src/app.py", "content": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "w", "content": "ok"}]}]}
    ret = check_retention(body, body, CCRStore.in_memory())
    assert (ret.paths.total, ret.paths.visible) == (1, 1)


def test_a_written_path_is_recoverable_from_a_stored_body_whose_secret_was_redacted():
    """Retention looks for the lines that name the file, not the whole input: CCR stores an
    original with its secrets redacted, and a Windows patch names the file with backslashes."""
    patch = "*** Begin Patch\n*** Add File: C:\\repo\\.env\n+API_KEY=sk-live-4f9a8b7c6d5e4f3a\n*** End Patch"
    body = {"messages": [
        {"role": "user", "content": "add the env file"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "p", "name": "apply_patch",
                                           "input": {"patchText": patch}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "p", "content": "Success."}]}]}
    store = CCRStore.in_memory()
    key = store.put(patch.replace("sk-live-4f9a8b7c6d5e4f3a", "[REDACTED:api_key]"))
    compressed = json.loads(json.dumps(body))
    compressed["messages"][1]["content"][0]["input"]["patchText"] = format_marker("4-line patch of .env stored", key)
    ret = check_retention(body, compressed, store)
    assert (ret.paths.total, ret.paths.visible, ret.paths.recoverable) == (1, 0, 1)
    assert check_retention(body, compressed, CCRStore.in_memory()).missing == ["path: C:/repo/.env"]


def test_usage_check_compares_with_reported_usage():
    from tests.test_formats_sessions import CLAUDE_CODE

    report = replay(read_text(CLAUDE_CODE))
    assert report.usage is not None and report.usage.compared == 3
    assert report.usage.reported_cost > 0 and report.usage.cost_ratio > 0


def test_the_unseen_system_prompt_and_tools_count_the_same_on_every_side_when_asked():
    """The recording lacks the host's system prompt and tools; the usage shows their size, and
    counting them (written once, then read) brings every side's ratio toward 1 by the same cost."""
    from tests.test_formats_sessions import CLAUDE_CODE

    report = replay(read_text(CLAUDE_CODE))
    unseen = report.usage.unseen_head
    assert unseen > 0 and report.unseen_head_cost == pytest.approx(unseen * (1.25 + 0.1 + 0.1))
    side, head = report.cap, report.unseen_head_cost
    assert report.ratio(side, with_head=True) == round((side.cost + head) / (report.raw.cost + head), 4)
    assert report.ratio(report.raw, with_head=True) == 1.0 and "with head" in report.render()


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "ctxmill", "replay", *args], capture_output=True, text=True,
                          env=env, timeout=120, cwd=ROOT)


def test_cli_report_json_and_summary(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_session(4)))
    out = _cli(str(path))
    assert out.returncode == 0, out.stderr
    assert "effective" in out.stdout and "counted with" in out.stdout and out.stderr == ""
    data = json.loads(_cli(str(path), "--json").stdout)
    assert data["requests"] == 6 and data["format"] == "request" and "cost_ratio" in data
    assert set(data["sides"]) == {"raw", "cap", "ctxmill"}
    assert data["sides"]["raw"]["effective_ratio"] == 1.0 and "by_age" in data["sides"]["cap"]["needed"]
    (tmp_path / "b.jsonl").write_text(read_flat_fixture())
    summary = _cli(str(tmp_path), "--summary")
    assert summary.returncode == 0 and "2 sessions, totals (sums of costs)" in summary.stdout
    assert "cap        modelled" in summary.stdout
    kinds = _cli(str(tmp_path), "--summary", "--by-kind")
    assert kinds.returncode == 0 and "cost by kind of content" in kinds.stdout and "file reads" in kinds.stdout
    assert json.loads(_cli(str(path), "--json", "--by-kind").stdout)["by_kind"]["cap"]["user text"] > 0
    missing_peer = _cli(str(path), "--headroom", str(tmp_path / "no-python"))
    assert missing_peer.returncode == 2 and "cannot import headroom" in missing_peer.stderr
    assert "unseen system+tools counted" not in summary.stdout  # neither recording reports usage


def test_cli_summary_counts_the_unseen_system_prompt_when_the_usage_shows_it(tmp_path):
    from tests.test_formats_sessions import CLAUDE_CODE

    (tmp_path / "cc.jsonl").write_text(CLAUDE_CODE)
    summary = _cli(str(tmp_path), "--summary")
    assert summary.returncode == 0, summary.stderr
    assert "with the unseen system+tools counted on every side: modelled raw 1.000" in summary.stdout


def read_flat_fixture() -> str:
    from tests.test_formats_sessions import FLAT

    return FLAT


def test_cli_errors_are_one_line(tmp_path):
    missing = _cli(str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    out = _cli(str(bad))
    assert out.returncode == 2 and "not a session format" in out.stderr
    forced = _cli(str(bad), "--format", "claude-flat")
    assert forced.returncode == 0 and "malformed" in forced.stdout


@pytest.mark.corpus
def test_corpus_sessions_read_with_paired_tools():
    from compress.formats.requests import from_provider
    from compress.formats.sessions import session_files
    from compress.model import index_tool_calls

    files = session_files(CORPUS / "transcripts")
    assert files
    for path in files:
        t = read_session(path)
        assert t.calls and t.malformed == 0, path
        request = from_provider(t.request(len(t.calls) - 1), t.provider)
        unanswered = [c for c in index_tool_calls(request.messages).values() if c.result_msg < 0]
        # a call is left unanswered only where the recording holds no answer to it (the id is
        # named once, by the call itself)
        source = path.read_text(encoding="utf-8", errors="replace")
        assert [c.tool_id for c in unanswered if source.count(c.tool_id) > 1] == [], path


@pytest.mark.corpus
def test_corpus_claude_code_usage_matches_the_model():
    path = CORPUS / "transcripts" / "claude-code" / "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    if not path.exists():
        pytest.skip(f"{path.name} is not in the corpus")
    report = replay(read_session(path))
    assert report.usage is not None and report.usage.compared > 50
    assert 0.8 < report.usage.cost_ratio < 1.2
    assert report.retention.fraction("recoverable") == 1.0


def _codex_rollout(calls: int, output_chars: int, window: int | None, unseen: int = 0) -> str:
    """A Codex rollout as Codex 0.17x writes it: a read per call, each followed by the
    `token_count` event that reports the call's usage (its request, plus `unseen` tokens of
    tools the rollout does not keep) and the window Codex uses."""
    from compress.token_counters import estimate_tokens

    def output(k: int) -> str:
        return "\n".join(f"def f{k}_{i}(value): return value * {i} + {k}  # module {k}" for i in range(output_chars // 48))

    lines = [{"type": "session_meta", "payload": {"base_instructions": {"text": "You are Codex."}}},
             {"type": "turn_context", "payload": {"model": "gpt-5.4"}},
             {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                   "content": [{"type": "input_text", "text": "read the modules"}]}}]
    for k in range(calls):
        lines.append({"type": "response_item", "payload": {
            "type": "function_call", "name": "exec_command", "call_id": f"c{k}",
            "arguments": json.dumps({"cmd": f"sed -n '1,4000p' src/mod{k}.py"})}})
        sent = 500 + unseen + sum(estimate_tokens(output(j)) for j in range(k))
        info: dict = {"last_token_usage": {"input_tokens": sent, "cached_input_tokens": 0, "output_tokens": 9}}
        if window:
            info["model_context_window"] = window
        lines.append({"type": "event_msg", "payload": {"type": "token_count", "info": info}})
        lines.append({"type": "response_item", "payload": {"type": "function_call_output", "call_id": f"c{k}",
                                                           "output": output(k)}})
    lines.append({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                       "content": [{"type": "output_text", "text": "done"}]}})
    return "\n".join(json.dumps(line) for line in lines)


def test_a_codex_replay_scales_its_tiers_with_the_window_codex_reports():
    """Codex records the window it uses in every `token_count` event; the proxy cannot see it,
    the replay can: a rollout that reports a 1M window (GPT-5.6 Sol on Bedrock) stays below the
    high tier where one reporting GPT-5.4's 258,400 reaches it."""
    calls = [replay(read_text(_codex_rollout(12, 80_000, window)), times=False) for window in (258_400, 1_000_000)]
    usual, reported = (report.tiers for report in calls)
    assert usual.get("high", 0) > 0, usual
    assert reported.get("high", 0) == 0 and reported.get("medium", 0) > 0, reported


def test_a_replay_follows_the_providers_count_of_what_is_sent_once_a_call_reports_usage():
    """The recorded usage counts what the rollout lacks (the host's tools and system prompt):
    with 120K tokens of them the same reads reach the high tier sooner, as a live proxy,
    calibrated by each answer's usage, would see them."""
    plain, heavy = (replay(read_text(_codex_rollout(12, 80_000, 258_400, unseen)), times=False).tiers
                    for unseen in (0, 120_000))
    assert heavy.get("high", 0) > plain.get("high", 0), (plain, heavy)



def test_the_window_a_client_ran_with_is_read_from_its_recording():
    """Codex reports its window; a Claude Code recording shows a 1M one when the provider counted
    more than the model's 200K in a request (the client asked for the `context-1m` beta, as the
    proxy would see in its header); otherwise the model table's applies (None)."""
    from compress.formats.sessions.transcript import ModelCall, Transcript
    from compress.formats.usage import Usage
    from replay.usage import client_window

    def claude(model: str, *prompts: int) -> Transcript:
        return Transcript("claude-code", "anthropic", {"model": model},
                          calls=[ModelCall(i + 1, Usage(input=10, cache_read=p)) for i, p in enumerate(prompts)])

    assert client_window(claude("claude-opus-4-6", 150_000, 310_000)) == 1_000_000
    assert client_window(claude("claude-opus-4-6", 150_000, 178_000)) is None
    assert client_window(claude("claude-opus-5-5", 150_000, 310_000)) is None  # its 1M is the table's
    assert client_window(claude("claude-sonnet-4-5-20250929")) is None
    codex = Transcript("codex", "openai-responses", {"model": "gpt-5.4"}, context_window=258_400)
    assert client_window(codex) == 258_400
