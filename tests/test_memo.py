"""The pipeline's text memos are bounded caches: what they account for never exceeds their
bound in bytes (as CPython stores the text, CJK and emoji included), and a run's bytes are the
same with a memo that keeps everything, one that keeps nothing, or one evicting as it goes."""

from __future__ import annotations

import contextlib
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.stagekit import memo as memo_module
from compress.stagekit import output_cut, stage
from compress.stagekit.memo import ENTRY_BYTES, TextMemo, used_by
from compress.state.session import Session
from ground.jsonbytes import dumps
from tests.helpers import compress
from tests.stagekit import anthropic

values = st.one_of(st.none(), st.text(alphabet=st.sampled_from("ab é漢😀\n"), max_size=300))


def _computed(calls: list, value: str | None):
    def compute() -> str | None:
        calls.append(value)
        return value
    return compute


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 4_000), st.integers(0, 2_000),
       st.lists(st.tuples(st.integers(0, 30), values), max_size=80))
def test_a_memo_never_holds_more_than_its_bound_and_answers_what_compute_answers(max_bytes, max_value, stream):
    memo = TextMemo(max_bytes=max_bytes, max_value_bytes=max_value)
    truth: dict[int, str | None] = {}
    for key, value in stream:
        expected = truth.setdefault(key, value)  # a key determines its value, as memo keys must
        assert memo.get_or_compute(key, _computed([], expected)) == expected
        held = memo._values
        assert memo.held_bytes() <= max_bytes
        assert memo.held_bytes() == sum(ENTRY_BYTES + (sys.getsizeof(v) if v is not None else 0)
                                        for v in held.values())
        assert all(v is None or sys.getsizeof(v) <= max_value for v in held.values())


def test_a_memo_counts_bytes_not_characters():
    memo = TextMemo(max_bytes=10_000, max_value_bytes=10_000)
    memo.get_or_compute("cjk", lambda: "漢" * 1_000)  # 2 bytes a character
    assert memo.held_bytes() >= 2_000 + ENTRY_BYTES
    memo.get_or_compute("emoji", lambda: "😀" * 2_000)  # 4 bytes a character: too large to keep
    assert len(memo) == 1


def test_a_memo_keeps_the_most_recently_used_and_computes_the_rest_again():
    each = ENTRY_BYTES + sys.getsizeof("0" * 10)
    memo = TextMemo(max_bytes=3 * each, max_value_bytes=sys.getsizeof("0" * 20))
    calls: list = []
    for i in range(4):
        assert memo.get_or_compute(i, _computed(calls, f"{i}" * 10)) == f"{i}" * 10
    assert len(memo) == 3  # the oldest was dropped
    assert memo.get_or_compute(3, _computed(calls, "other")) == "3" * 10
    assert memo.get_or_compute(0, _computed(calls, "0" * 10)) == "0" * 10
    assert calls == [f"{i}" * 10 for i in range(4)] + ["0" * 10]
    for _ in range(2):
        assert memo.get_or_compute("big", _computed(calls, "y" * 21)) == "y" * 21
    assert calls[-2:] == ["y" * 21] * 2  # too large to keep: computed each time
    assert memo.get_or_compute("none", _computed(calls, None)) is None
    assert memo.get_or_compute("none", _computed(calls, "not again")) is None
    assert (memo.hits, memo.misses) == (2, 8)


users = st.sampled_from(["a", "b", "c"])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 3_000), st.lists(st.one_of(st.tuples(st.just("use"), st.one_of(st.none(), users), st.integers(0, 12)),
                                                 st.tuples(st.just("release"), users, st.just(0))), max_size=80))
def test_releasing_a_user_drops_exactly_the_entries_no_other_user_holds(max_bytes, steps):
    """A model of who used each held entry since it was stored (None: a use outside `used_by`):
    releasing a user drops the entries it used that no other unreleased user did, nothing else,
    and says how many bytes went."""
    memo = TextMemo(max_bytes=max_bytes, max_value_bytes=max_bytes)
    used: dict[int, set[str | None]] = {}
    for action, user, key in steps:
        if action == "use":
            with used_by(user) if user is not None else contextlib.nullcontext():
                assert memo.get_or_compute(key, lambda key=key: f"{key}" * 20) == f"{key}" * 20
            used = {k: u for k, u in used.items() if k in memo._values}  # the bound dropped the others
            if key in memo._values:
                used.setdefault(key, set()).add(user)
        else:
            held, before = memo.held_bytes(), set(memo._values)
            gone = {k for k, u in used.items() if user in u and not u - {user, None}}
            assert memo.release(user) == held - memo.held_bytes()
            assert set(memo._values) == before - gone
            used = {k: u - {user} for k, u in used.items() if k not in gone}
        assert memo.held_bytes() == sum(ENTRY_BYTES + sys.getsizeof(v) for v in memo._values.values())
        assert memo.users() == len(set().union(set(), *used.values()) - {None})


def test_release_reaches_every_memo_of_the_process():
    memos = [TextMemo(max_bytes=10_000, max_value_bytes=10_000) for _ in range(2)]
    with used_by("gone"):
        for n, memo in enumerate(memos):
            memo.get_or_compute(n, lambda: "x" * 100)
    memos[0].get_or_compute("outside", lambda: "y")
    assert memo_module.release("gone") == 2 * (ENTRY_BYTES + sys.getsizeof("x" * 100))
    assert [len(m) for m in memos] == [1, 0] and all(m.users() == 0 for m in memos)


def _session_bytes(turns: int) -> list[bytes]:
    """The bytes a session of growing tool output (build logs, a secret, CJK text) sends."""
    calls: list[tuple[str, dict, object]] = []
    out, session, store = [], Session.memory(), CCRStore.in_memory()
    for n in range(turns):
        log = "\n".join(f"step {i} ok 构建" if i % 37 else f"step {i} ERROR: disk full" for i in range(300 + 40 * n))
        calls.append(("Bash", {"command": f"make {n}"}, log + f"\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY{n:08d}"))
        out.append(dumps(compress(anthropic(calls, turns_after=2), session=session, store=store).body))
    return out


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 60_000))
def test_a_sessions_bytes_do_not_depend_on_what_the_memos_keep(bound):
    saved = output_cut.TRIMMED, stage.REDACTED  # set by hand: hypothesis runs many examples per test
    try:
        output_cut.TRIMMED, stage.REDACTED = (TextMemo(max_bytes=2**30, max_value_bytes=2**30) for _ in "tr")
        cold = _session_bytes(6)
        warm = _session_bytes(6)  # every trim and redaction answered from the memos
        assert output_cut.TRIMMED.hits > 0 and stage.REDACTED.hits > 0
        output_cut.TRIMMED, stage.REDACTED = (TextMemo(max_bytes=bound, max_value_bytes=bound) for _ in "tr")
        evicting = _session_bytes(6)
    finally:
        output_cut.TRIMMED, stage.REDACTED = saved
    assert cold == warm == evicting
