"""The only-copy rule for reads in trim_outputs: below the high tier, a read whose lines no later
message shows (a re-read of a covering range, a whole write, a deletion: `stale_reads`) stays
whole, however old, cold, committed or far from source code it is; at the high tier (the host
compacts soon) it may be cut. Client shapes: Claude Code `Read` (`     12→` prefixes), Codex
`exec_command` `sed -n` / `cat` output."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.formats.requests import from_provider
from compress.runner.pipeline import Chain, run
from compress.stages import trim_outputs
from compress.stages.trim_outputs import stale_reads
from compress.state.session import Session
from tests.stagekit import anthropic, assert_markers_resolve, codex_exec, config, result_texts, run_stage

STATUS = [f"- [x] Milestone {i}: settle group expenses in USDC on chain {i % 7}, see docs/flow-{i}.md" for i in range(420)]
CODE = [f"    total_{i} = settle(group_{i}, amount={i}, currency='USDC')" for i in range(420)]


def claude_read(path: str, lines: list[str], first: int = 1, last: int | None = None) -> tuple[str, dict, str]:
    """A Claude Code Read of lines first..last (1-based, inclusive) as Claude Code numbers them."""
    last = last or len(lines)
    tool_input: dict = {"file_path": path} if (first, last) == (1, len(lines)) else {
        "file_path": path, "offset": first, "limit": last - first + 1}
    return "Read", tool_input, "\n".join(f"{n:6}\u2192{lines[n - 1]}" for n in range(first, last + 1))


def codex_outputs(body: dict) -> list[str]:
    return [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]


OTHER_EDIT = ("Edit", {"file_path": "/repo/src/other.ts", "old_string": "a", "new_string": "b"}, "ok")


def test_claude_code_a_cold_status_read_stays_whole_below_the_high_tier():
    """The FundWise shape: a 30K STATUS.md read, 40 turns old, its file never changed nor read
    again (cold, not source code). At the always and medium tiers it is the agent's only copy
    of those lines and stays whole; at the high tier it is cut, the original in CCR."""
    read = claude_read("/repo/STATUS.md", STATUS)
    body = anthropic([read, OTHER_EDIT], turns_after=40)
    text = read[2]
    assert len(text) > 30_000
    for tier in ("always", "medium"):
        assert result_texts(run_stage(body, trim_outputs.STAGE, config(tier))[0].body)[0] == text, tier
    result, store = run_stage(body, trim_outputs.STAGE, config("high"))
    after = result_texts(result.body)[0]
    assert len(after) < len(text) / 2
    assert assert_markers_resolve(after, text, store) >= 1


def test_codex_cold_sed_and_cat_reads_stay_whole_below_the_high_tier():
    """Codex `sed -n` of a doc and `cat` of a source file, both left alone 40 turns and made
    before a successful `git commit` (cold twice over): whole at medium, cut at high."""
    doc, code = "\n".join(STATUS), "\n".join(CODE)
    body = codex_exec([("sed -n '1,420p' STATUS.md", doc), ("cat src/settle.ts", code),
                       ("git commit -am 'settle'", "[main 1a2b3c4] settle")], turns_after=40)
    medium = codex_outputs(run_stage(body, trim_outputs.STAGE, config("medium"))[0].body)
    assert medium[:2] == codex_outputs(body)[:2]
    high = codex_outputs(run_stage(body, trim_outputs.STAGE, config("high"))[0].body)
    assert all(len(after) < len(before) / 2 for after, before in zip(high[:2], codex_outputs(body)[:2]))


def test_a_read_that_a_later_message_shows_again_is_cut_at_any_tier():
    """A re-read of a covering range or a whole write shows the read's lines again: the earlier
    read is stale and is cut below the high tier too. A re-read of another range shows none of
    them, and the first read stays whole."""
    first = claude_read("/repo/STATUS.md", STATUS, 1, 200)
    covering = claude_read("/repo/STATUS.md", STATUS)
    other_range = claude_read("/repo/STATUS.md", STATUS, 201, 420)
    rewrite = ("Write", {"file_path": "/repo/STATUS.md", "content": "# Status\n"}, "ok")
    for later in (covering, rewrite):
        body = anthropic([first, later], turns_after=3)
        result, store = run_stage(body, trim_outputs.STAGE, config("medium"))
        after = result_texts(result.body)[0]
        assert len(after) < len(first[2]) and find_markers(after), later[0]
        assert_markers_resolve(after, first[2], store)
    body = anthropic([first, other_range], turns_after=3)
    assert result_texts(run_stage(body, trim_outputs.STAGE, config("medium"))[0].body) == [first[2], other_range[2]]


READS = st.sampled_from(["/repo/STATUS.md", "/repo/src/settle.ts", "/repo/package.json", "/tmp/build.log"])
CALLS = st.one_of(
    st.tuples(st.just("read"), READS, st.integers(1, 420), st.integers(0, 420)),
    st.tuples(st.just("write"), READS, st.just(0), st.just(0)),
    st.tuples(st.just("edit"), READS, st.integers(0, 419), st.just(0)),
    st.tuples(st.just("commit"), st.just(""), st.just(0), st.just(0)),
)


def history_call(kind: str, path: str, start: int, length: int) -> tuple[str, dict, str]:
    lines = CODE if path.endswith(".ts") else STATUS
    if kind == "read":
        return claude_read(path, lines, start, min(len(lines), start + length))
    if kind == "write":
        return "Write", {"file_path": path, "content": "\n".join(lines[:40])}, "ok"
    if kind == "edit":
        return "Edit", {"file_path": path, "old_string": lines[start], "new_string": "x"}, "ok"
    return "Bash", {"command": "git commit -am wip"}, "[main 1a2b3c4] wip"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(CALLS, min_size=1, max_size=6), turns_after=st.integers(0, 45),
       tier=st.sampled_from(["always", "medium"]),
       gaps=st.one_of(st.none(), st.lists(st.floats(0, 7_200), min_size=7, max_size=7)))
def test_property_a_read_no_later_message_shows_is_never_cut_below_the_high_tier(calls, turns_after, tier, gaps):
    """For random histories of reads (ranges, docs, source, logs), writes, edits and commits,
    however old, sent request by request through one session with no times or any pauses
    between them (a cache that expires re-decides everything): below the high tier every read
    that `stale_reads` does not find shown again is sent byte for byte in the last request."""
    body = anthropic([history_call(*call) for call in calls], turns_after=turns_after)
    stale = stale_reads(list(from_provider(body).messages))
    session, store = Session.memory(), CCRStore.in_memory()
    requests = [anthropic([history_call(*call) for call in calls[:k]], turns_after=0) for k in range(1, len(calls))]
    for k, request in enumerate([*requests, body]):
        now = None if gaps is None else 1.9e9 + sum(gaps[: k + 1])
        result = run(request, session=session, store=store, config=config(tier), chain=Chain([trim_outputs.STAGE]), now=now)
        assert not result.report.error, result.report.error
    for n, (call, before, after) in enumerate(zip(calls, result_texts(body), result_texts(result.body))):
        if call[0] == "read" and f"toolu_{n:03d}" not in stale:
            assert after == before, (n, call)
