"""Cache-stable epochs: between epochs, compressed request k is a byte prefix of request k+1."""

from __future__ import annotations

import copy
from dataclasses import replace
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.requests import from_provider
from compress.provider_cache import provider_blocks
from compress.runner import trial
from compress.runner.epochs import EpochChoice, best_start, cached_prefixes, epoch_trial, pays_off
from compress.runner.pipeline import run
from compress.state.session import STATE_FILE, Session, known_prefix, prefix_hashes, state_lock
from ground.jsonbytes import dumps
from tests.helpers import READS_BY_AGE, SMALL_TAIL, conversation_field
from tests.strategies import requests


def feed(body, config, session_factory, store=None):
    """Send request k = first k messages, k = 1..n, through one session; yield (k, result)."""
    store = store or CCRStore.in_memory()
    field = conversation_field(body)
    for k in range(1, len(body[field]) + 1):
        request = {**body, field: copy.deepcopy(body[field][:k])}
        with session_factory() as session:
            yield k, run(request, session=session, store=store, config=config)


class _Memory:
    def __init__(self):
        self.session = Session.memory()

    def __call__(self):
        import contextlib

        return contextlib.nullcontext(self.session)


def assert_prefix_stable(results):
    previous = None
    for k, result in results:
        assert not result.report.error
        out = [dumps(m) for m in result.body[conversation_field(result.body)]]
        if previous is not None and result.report.mode == "incremental":
            assert out[: len(previous)] == previous, f"request {k} rewrote an old message outside an epoch"
        previous = out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests)
def test_turn_by_turn_prefix_is_stable_between_epochs(body):
    config = replace(SMALL_TAIL, epoch_savings_threshold=10**9)
    assert_prefix_stable(feed(body, config, _Memory()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests)
def test_savings_epochs_are_declared(body):
    config = replace(SMALL_TAIL, epoch_savings_threshold=30)
    assert_prefix_stable(feed(body, config, _Memory()))


def _reminder_turns(n):
    reminder = "<system-reminder>" + "Remember the todo list. " * 30 + "</system-reminder>"
    messages = [{"role": "user", "content": "start"}]
    for i in range(n):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash",
                                                           "input": {"command": f"step {i}"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                      "content": f"output {i}\n{reminder}"}]})
    return {"system": "s", "messages": messages}


def test_incremental_runs_leave_old_messages_until_an_epoch_pays():
    body = _reminder_turns(12)
    config = replace(SMALL_TAIL, protect_tail_turns=2, epoch_savings_threshold=400, epoch_horizon=0)
    modes = [(k, r.report.mode, r.report.epoch_reason) for k, r in feed(body, config, _Memory())]
    assert modes[0][1] == "epoch" and modes[0][2] == "new session"
    epochs = [m for m in modes[1:] if m[1] == "epoch"]
    assert epochs and all(reason.startswith("saves") for _, _, reason in epochs)
    assert len(epochs) < len(modes) // 2  # most turns are incremental


def test_a_move_into_the_high_tier_starts_an_epoch_and_one_into_medium_waits():
    """Re-deciding every old message at the medium budgets saves little and makes the provider
    write the whole request again; the high tier is close to the host's own compaction (here
    what the provider is sent is high too: the epoch strips the reminders, 41% of the request, and
    the tier is that of what is sent)."""
    body = _reminder_turns(3)
    session = Session.memory()
    store = CCRStore.in_memory()
    first = run(body, session=session, store=store, config=SMALL_TAIL)
    same = run(body, session=session, store=store, config=SMALL_TAIL)
    medium = run(body, session=session, store=store, config=SMALL_TAIL, reported_input_tokens=100_000)  # sends ~59K
    high = run(body, session=session, store=store, config=SMALL_TAIL, reported_input_tokens=1_000_000)
    assert (first.report.mode, same.report.mode) == ("epoch", "incremental")
    assert (medium.report.mode, medium.report.tier, medium.body) == ("incremental", "medium", same.body)
    assert high.report.mode == "epoch" and high.report.epoch_reason == "tier always → high"


def test_only_a_rendering_under_pressure_forces_an_epoch_and_once():
    """The host compacts on what the provider is sent, so the tier is that of what is sent. A
    request whose raw size is in the high tier while its rendering is far below it (a long build
    log cut on arrival) is in its rendering's tier and waits for an epoch that pays; one whose
    rendering is high too forces one, once: the next request at the same pressure does not force
    another."""
    log = "\n".join(f"compiling module {i} of the build, warnings none" for i in range(20_000))
    body = {"system": "s", "messages": [
        {"role": "user", "content": "build it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "make"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": log}]}]}
    session, store = Session.memory(), CCRStore.in_memory()

    def turn(k: int, reported: int):
        body["messages"] += [{"role": "assistant", "content": [{"type": "text", "text": f"step {k}"}]},
                             {"role": "user", "content": f"go on {k}"}]
        return run(body, session=session, store=store, config=SMALL_TAIL, reported_input_tokens=reported).report

    first = run(body, session=session, store=store, config=SMALL_TAIL, reported_input_tokens=60_000).report
    assert first.mode == "epoch" and first.tier == "medium" and first.tokens_after < first.tokens_before / 20
    raw_high = turn(1, 160_000)
    assert (raw_high.tier, raw_high.mode) == ("always", "incremental")  # the rendering is < 8K of 160K
    rendering_high = 2 * 150_000 * first.tokens_before // first.tokens_after  # the rendering's share scaled
    sent_high = turn(2, rendering_high)
    assert (sent_high.mode, sent_high.epoch_reason) == ("epoch", "tier always → high")
    assert turn(3, rendering_high).mode == "incremental"


def test_state_persists_across_processes(tmp_path):
    """A session reloaded from disk each turn renders exactly as one kept in memory."""
    body = _reminder_turns(8)
    config = replace(SMALL_TAIL, epoch_savings_threshold=400)
    in_memory = [dumps(r.body) for _, r in feed(body, config, _Memory())]
    on_disk = [dumps(r.body) for _, r in feed(body, config, lambda: Session.open(tmp_path / "s"))]
    assert on_disk == in_memory
    assert (tmp_path / "s" / STATE_FILE).stat().st_mode & 0o077 == 0


def test_a_session_kept_in_memory_sees_another_process_write_its_state(tmp_path):
    mine = Session.load(tmp_path)
    with state_lock(tmp_path):
        run(_reminder_turns(4), session=mine, store=CCRStore.in_memory(), config=SMALL_TAIL)
        mine.save()
    assert not mine.changed_on_disk() and not Session.memory().changed_on_disk()
    with Session.open(tmp_path) as theirs:
        theirs.set_next_trial(123)
    assert mine.changed_on_disk()
    assert not Session.load(tmp_path).changed_on_disk()


def test_torn_or_corrupt_state_is_never_trusted(tmp_path):
    body = _reminder_turns(4)
    with Session.open(tmp_path) as session:
        run(body, session=session, store=CCRStore.in_memory(), config=SMALL_TAIL)
    state = tmp_path / STATE_FILE
    state.write_bytes(state.read_bytes() + b'{"h": "trunc')
    reloaded = Session.load(tmp_path)
    assert len(reloaded.records) == len(body["messages"])
    state.write_bytes(b"not json\n")
    assert Session.load(tmp_path).records == {}


def test_window_epoch_rewrites_only_after_a_cached_request():
    """A big result that leaves the protected tail is compressed by an epoch whose first change
    lies after the end of a request the provider already cached, within the cache window."""
    messages = [{"role": "user", "content": "start"}]
    for i in range(8):
        output = "\n".join(f"line {j} of step {i}" for j in range(2_000 if i == 2 else 3))
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read",
                                                        "input": {"file_path": f"/src/step{i}.txt"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}]}]
    body = {"system": "s", "messages": messages}
    config = replace(SMALL_TAIL, protect_tail_tokens=0, protect_tail_turns=2, epoch_savings_threshold=10**9,
                     window_epoch_savings=500)
    outputs: list[list[bytes]] = []
    window_epochs = 0
    for _, result in feed(body, config, _Memory()):
        out = [dumps(m) for m in result.body[conversation_field(result.body)]]
        if result.report.mode == "epoch" and result.report.epoch_reason.startswith("saves"):
            window_epochs += 1
            assert any(out[: len(p)] == p for p in outputs[1:]), "no cached request is a prefix"
        outputs.append(out)
    assert window_epochs == 1
    assert " of 2,000 lines" in outputs[-1][6].decode()  # the big step-2 read is trimmed


def test_window_epoch_starts_at_the_first_message_worth_re_deciding():
    """Small outputs that left the protected tail before the big one do not start the epoch's
    trial: it re-decides from the big output on, so the provider still reads the cached request
    that ends just before it. With no minimum the trial starts at the first small one (and
    `best_start` then moves the epoch to the big one: `test_an_epoch_starts_where_it_gains_most`)."""
    body = _big_output_turns(6, big=2)
    big = 6  # messages: start, then (tool_use, tool_result) per step
    config = replace(SMALL_TAIL, protect_tail_tokens=0, protect_tail_turns=2, epoch_savings_threshold=10**9,
                     window_epoch_savings=500)

    def epoch_start(config):
        """Where the cached request the savings epoch starts after ends: judged after request
        k - 1 (which then counts as cached too), it is first sent with request k."""
        sessions = _Memory()
        for k, result in feed(body, config, sessions):
            if result.report.epoch_reason.startswith("saves"):
                return max(e for e in sessions.session.request_ends if e < k - 1)
        raise AssertionError("no savings epoch")

    assert epoch_start(config) == big
    with patch.object(trial, "best_start", lambda choice, *args: choice):
        assert epoch_start(replace(config, window_start_min_tokens=0)) < big


def _big_output_turns(n: int, big: int) -> dict:
    """Reads of text files (not source code, whose fresh reads stay whole), one of them big."""
    messages = [{"role": "user", "content": "start"}]
    for i in range(n):
        output = "\n".join(f"line {j} of step {i}" for j in range(2_000 if i == big else 3))
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read",
                                                        "input": {"file_path": f"/src/step{i}.txt"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}]}]
    return {"system": "s", "messages": messages}


def test_an_epoch_from_the_start_when_the_provider_writes_the_whole_request_anyway():
    """A request that adds more blocks than the cache window holds has no cached prefix the
    provider would read, so re-deciding everything costs nothing extra."""
    body = _big_output_turns(16, big=1)
    config = replace(SMALL_TAIL, protect_tail_turns=2, epoch_savings_threshold=10**9, window_epoch_savings=500)
    session, store = Session.memory(), CCRStore.in_memory()
    first = run({**body, "messages": body["messages"][:5]}, session=session, store=store, config=config)
    assert first.report.mode == "epoch" and "step 1" in dumps(first.body["messages"][4]).decode()
    assert len(body["messages"]) - 5 > config.cache_window_blocks
    result = run(body, session=session, store=store, config=config)
    assert result.report.mode == "epoch" and result.report.epoch_reason.startswith("saves")
    assert " of 2,000 lines" in dumps(result.body["messages"][4]).decode()
    again = run(body, session=Session.memory(), store=store, config=replace(config, window_epoch_savings=10**9))
    assert again.body == result.body  # the same decisions as a fresh session's


def test_an_epoch_that_would_not_pay_back_its_cache_writes_is_skipped():
    body = _reminder_turns(12)
    base = replace(SMALL_TAIL, protect_tail_turns=2, epoch_savings_threshold=400)
    def savings_epochs(config):
        return [k for k, r in feed(body, config, _Memory()) if r.report.epoch_reason.startswith("saves")]
    assert savings_epochs(replace(base, epoch_horizon=0))
    assert savings_epochs(replace(base, epoch_horizon=0.001)) == []


def test_the_default_horizon_prices_an_epoch_over_a_quarter_of_the_turns_so_far():
    """A rewrite that would pay back its cache writes only if the session ran as long again as
    it has (1 x the turns so far) is refused by default: sessions that end soon after such an
    epoch cost more than sending everything (corpus: two short sessions at 1.006 and 1.030)."""
    choice = EpochChoice(start=0, needed=500, cached_end=0, read_end=2, potential=1_000)
    current, trial = [1_000, 1_000], [1_000, 0]  # saves 1,000 tokens, writes 1,000 again
    assert pays_off(choice, current, trial, 12, replace(CompressConfig(), epoch_horizon=1.0))
    assert not pays_off(choice, current, trial, 24, CompressConfig())
    assert pays_off(choice, current, trial, 48, CompressConfig())


def test_an_epoch_pays_off_at_the_providers_own_cache_prices():
    """The same rewrite pays back sooner where cached input costs more and writes carry no
    premium (OpenAI's gpt-4o: reads at 0.5, writes at 1.0) than at Anthropic's 0.1 and 2.0."""
    from compress.provider_cache import LIVES, cache_life

    choice = EpochChoice(start=0, needed=500, cached_end=0, read_end=2, potential=1_000)
    current, trial = [1_000, 1_000], [1_000, 0]
    assert pays_off(choice, current, trial, 4, CompressConfig(), cache_life("openai", None, model="gpt-4o"))
    assert not pays_off(choice, current, trial, 48, CompressConfig(), LIVES["1h"])
    assert pays_off(choice, current, trial, 96, CompressConfig(), LIVES["1h"])


def test_an_epoch_pays_off_at_the_models_own_cache_prices():
    """Claude Opus 5.5 and GPT-6.2 Sol read their cache at 0.05 of the input price, half what
    Opus 4.6 and GPT-5.4 charge, and GPT-6.2 Sol's writes cost 1.25 (OpenAI's premium from the
    GPT-5.6 family on): the same rewrite needs more than twice the turns to pay back. A model
    outside the price table keeps the cautious default."""
    from compress.provider_cache import UNLISTED, cache_life

    choice = EpochChoice(start=0, needed=500, cached_end=0, read_end=2, potential=1_000)
    current, trial = [1_000, 1_000], [1_000, 0]
    lives = {model: cache_life(provider, None, model=model) for provider, model in (
        ("anthropic", "claude-opus-4-6"), ("anthropic", "claude-opus-5-5-20250922"),
        ("openai-responses", "gpt-5.4"), ("openai-responses", "openai/gpt-6.2-sol"))}
    assert [(life.read_price, life.write_price) for life in lives.values()] == [
        (0.1, 1.25), (0.05, 1.25), (0.1, 1.0), (0.05, 1.25)]
    assert cache_life("openai", None, model="local-llama") == UNLISTED

    def pays(model: str, turn: int) -> bool:
        return pays_off(choice, current, trial, turn, CompressConfig(), lives[model])

    assert pays("claude-opus-4-6", 48) and not pays("claude-opus-5-5-20250922", 48)
    assert pays("claude-opus-5-5-20250922", 96)
    assert pays("gpt-5.4", 32) and not pays("openai/gpt-6.2-sol", 48) and pays("openai/gpt-6.2-sol", 96)


def test_cached_requests_before_an_epochs_first_change_stay_known():
    session = Session.memory()
    for end in (3, 5, 7):
        session.add_request_end(end)
    session.start_epoch("anthropic", 0, 4, {}, unchanged=5)
    assert session.request_ends == [3, 5]
    session.start_epoch("anthropic", 0, 4, {})
    assert session.request_ends == []


def _openai_big_output_turns(n: int, big: int) -> dict:
    """`_big_output_turns` in OpenAI Chat's shape."""
    messages: list[dict] = [{"role": "user", "content": "start"}]
    for i in range(n):
        output = "\n".join(f"line {j} of step {i}" for j in range(2_000 if i == big else 3))
        messages += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"t{i}", "type": "function",
                          "function": {"name": "read_file", "arguments": f'{{"path": "/src/step{i}.txt"}}'}}]},
                     {"role": "tool", "tool_call_id": f"t{i}", "content": output}]
    return {"model": "gpt-5", "messages": messages}


def test_an_openai_request_keeps_its_cached_prefix_through_an_epoch_far_back():
    """Anthropic looks for a cached prefix only 20 blocks back, so re-deciding an output further
    back makes it write the whole request: the epoch is a re-run from the start that costs
    nothing more. OpenAI reuses any earlier prefix, so the same epoch re-decides from that output
    on, priced as a rewrite of what follows the cached request before it."""
    config = replace(SMALL_TAIL, protect_tail_turns=2, epoch_savings_threshold=10**9, window_epoch_savings=500)
    choices = {}
    for provider, body in (("anthropic", _big_output_turns(16, big=1)), ("openai", _openai_big_output_turns(16, big=1))):
        session, store = Session.memory(), CCRStore.in_memory()
        for k in (3, 5):  # the big read arrives in the protected tail, whole
            run({**body, "messages": body["messages"][:k]}, session=session, store=store, config=config)
        canon = list(from_provider(body).messages)
        hashes = prefix_hashes(body["messages"])
        frozen = known_prefix(hashes, session.records, body["messages"])
        assert frozen == 5 and len(body["messages"]) - 5 > config.cache_window_blocks
        choices[provider] = epoch_trial(canon, provider_blocks(canon), frozen, len(canon) - 2, session, hashes,
                                        config, provider=provider)
        if provider == "openai":
            choices["any prefix"] = epoch_trial(canon, provider_blocks(canon), frozen, len(canon) - 2, session,
                                                hashes, config, provider=provider, any_prefix=True)
        result = run(body, session=session, store=store, config=config)
        assert result.report.mode == "epoch" and " of 2,000 lines" in dumps(result.body["messages"][4]).decode()
    assert (choices["anthropic"].start, choices["anthropic"].read_end) == (0, 0)
    assert (choices["openai"].start, choices["openai"].cached_end, choices["openai"].read_end) == (4, 3, 5)
    # OpenAI before GPT-5.6 serves any prefix of the last request: only the output on is written again
    assert (choices["any prefix"].start, choices["any prefix"].cached_end, choices["any prefix"].read_end) == (4, 4, 5)


def test_a_cache_that_serves_any_prefix_holds_every_boundary_up_to_the_first_change():
    session = Session.memory()
    assert cached_prefixes(session, 4, any_prefix=True) == []  # nothing sent yet: nothing cached
    for end in (3, 7):
        session.add_request_end(end)
    assert cached_prefixes(session, 5, any_prefix=False) == [3]
    assert cached_prefixes(session, 5, any_prefix=True) == [1, 2, 3, 4, 5]


def test_an_epoch_starts_where_it_gains_most():
    """Small outputs that left the protected tail open the window, but only a later big one
    saves anything: re-deciding from the first small one would make the provider write every
    message after it again, so the epoch starts at the cached request just before the big output
    (`best_start`), and the provider reads all that comes before from its cache."""
    body = _openai_big_output_turns(16, big=6)
    big = 14  # messages: start, then (call, result) per step
    config = replace(SMALL_TAIL, protect_tail_turns=2, epoch_savings_threshold=10**9, window_epoch_savings=500,
                     window_start_min_tokens=0)
    sessions = _Memory()
    previous: list[bytes] = []
    for _, result in feed(body, config, sessions):
        out = [dumps(m) for m in result.body["messages"]]
        if result.report.epoch_reason.startswith("saves"):
            assert big in sessions.session.request_ends  # the cached request it starts after
            assert out[:big] == previous[:big] and out[big] != previous[big]
            assert " of 2,000 lines" in out[big].decode()
            return
        previous = out
    raise AssertionError("no savings epoch")


def test_a_later_start_must_pay_off_and_save_enough():
    """`best_start` moves an epoch to a later cached request only where it gains more than at its
    own start and still pays off and saves what the choice needs."""
    from compress.provider_cache import LIVES

    life, config = LIVES["5m"], CompressConfig()
    choice = EpochChoice(start=1, needed=500, cached_end=1, read_end=5, potential=2_000)
    current = [100, 1_000, 1_000, 2_000, 3_000]
    trial = [100, 1_000, 1_000, 500, 3_000]  # only message 3 saves
    later = best_start(choice, [1, 2, 3, 5], current, trial, 200, config, life)
    assert (later.start, later.cached_end, later.read_end) == (3, 3, 5)
    assert pays_off(later, current, trial, 200, config, life)
    everywhere = [100, 0, 0, 500, 3_000]  # the old messages save too: starting at 1 gains most
    assert best_start(choice, [1, 2, 3, 5], current, everywhere, 200, config, life) == choice
    assert best_start(choice, [1, 2, 3, 5], current, trial, 40, config, life) == choice  # pays off nowhere
    greedy = replace(choice, needed=5_000)  # more than any start saves
    assert best_start(greedy, [1, 2, 3, 5], current, trial, 200, config, life) == greedy


def _with_breakpoint(body: dict, mark: dict) -> dict:
    """`body` with a cache breakpoint `mark` on the last block of its last message, as Claude Code sends."""
    *before, last = body["messages"]
    *blocks, end = last["content"]
    return {**body, "messages": [*before, {**last, "content": [*blocks, {**end, "cache_control": mark}]}]}


def test_a_request_after_the_cache_expired_re_decides_for_free():
    """Once the provider's cache has expired it writes the whole request whatever changed, so
    re-deciding every message costs nothing extra: an epoch that does not pay back its cache
    writes a minute after the last request is taken when the cache is gone (5 minutes unused,
    or an hour when the request's breakpoints ask for one), and never when the time is unknown."""
    config = replace(SMALL_TAIL, protect_tail_turns=2, epoch_savings_threshold=10**9, window_epoch_savings=500,
                     epoch_horizon=0.001)

    def last_run(gap, mark=None, timed=True):
        body = _big_output_turns(8, big=1)
        step2 = body["messages"][6]  # a long note after the big read: rewriting it costs more than the cut saves
        step2["content"].append({"type": "text", "text": "Keep going, and note what you find. " * 1_000})
        session, store = Session.memory(), CCRStore.in_memory()
        n = len(body["messages"])
        for k in range(1, n):
            part = {**body, "messages": body["messages"][:k]}
            run(_with_breakpoint(part, mark) if mark and k > 1 else part, session=session, store=store, config=config,
                now=1_000.0 + k if timed else None)
        last = _with_breakpoint(body, mark) if mark else body
        result = run(last, session=session, store=store, config=config, now=1_000.0 + n - 1 + gap if timed else None)
        return result.report, dumps(result.body["messages"][4]).decode()

    report, big = last_run(60)
    assert report.mode == "incremental" and " of 2,000 lines" not in big
    report, big = last_run(301)
    assert report.mode == "epoch" and report.epoch_reason.startswith("saves") and " of 2,000 lines" in big
    assert last_run(301, timed=False)[0].mode == "incremental"
    hour = {"type": "ephemeral", "ttl": "1h"}
    assert last_run(301, hour)[0].mode == "incremental"
    assert last_run(3_601, hour)[0].mode == "epoch"
    assert last_run(301, {"type": "ephemeral"})[0].mode == "epoch"


def test_the_time_of_the_last_request_survives_a_reload(tmp_path):
    body = _reminder_turns(2)
    with Session.open(tmp_path) as session:
        run(body, session=session, store=CCRStore.in_memory(), config=SMALL_TAIL, now=1_234.5)
    assert Session.load(tmp_path).header.last_request_at == 1_234.5


def test_the_cache_lifetime_is_what_the_request_asks_for():
    """Claude Code marks its system prompt and last message `{"type": "ephemeral", "ttl": "1h"}` on
    a subscription, without `ttl` otherwise; OpenAI promises no lifetime."""
    from compress.formats.requests import cache_ttl
    from compress.provider_cache import LIVES, cache_life

    body = _reminder_turns(2)
    hour = _with_breakpoint(body, {"type": "ephemeral", "ttl": "1h"})
    system_only = {**body, "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}
    assert [cache_ttl("anthropic", b) for b in (body, hour, system_only)] == [None, "1h", "1h"]
    assert cache_ttl("anthropic", _with_breakpoint(body, {"type": "ephemeral"})) == "5m"
    assert cache_life("anthropic", "1h") == LIVES["1h"] and cache_life("anthropic", None) == LIVES["5m"]
    assert cache_life("anthropic", "1h", configured="5m") == LIVES["5m"]
    openai = cache_life("openai", None, configured="1h", model="gpt-5.4")
    assert (openai.seconds, openai.write_price, openai.read_price) == (None, 1.0, 0.1)
    assert not openai.expired(1.0, 10**9) and cache_life("openai", None, model="gpt-4o").read_price == 0.5
    assert LIVES["5m"].expired(100.0, 401.0) and not LIVES["5m"].expired(100.0, 400.0)
    assert not LIVES["5m"].expired(0.0, 10**9) and not LIVES["5m"].expired(100.0, None)


def _read_then_quiet_turns(n: int) -> dict:
    """A 300-line source read, a subagent's long report (cut once it leaves the protected tail,
    while the read is still fresh), then `n` turns of tiny outputs."""
    source = "\n".join(f"def function_{i}(value): return value * {i}  # keep this line" for i in range(1, 301))
    report = "\n".join(f"Finding {i}: the handler in module {i} calls the service twice." for i in range(300))
    messages = [{"role": "user", "content": "start"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "r", "name": "Read",
                                                   "input": {"file_path": "/src/app.py"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r", "content": source}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Task",
                                                   "input": {"prompt": "survey the handlers"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": report}]}]
    for i in range(n):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash",
                                                        "input": {"command": f"echo {i}"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i}"}]}]
    return {"system": "s", "messages": messages}


def test_a_read_kept_whole_is_cut_once_it_goes_cold_without_new_output_to_pay_for_the_epoch():
    """An epoch decided the read while it was fresh (kept whole); when it goes cold, it alone is
    worth a re-decision, though nothing newer is left to cut (`open_to_cuts`)."""
    body = _read_then_quiet_turns(12)
    config = replace(SMALL_TAIL, protect_tail_turns=2, epoch_savings_threshold=400, window_epoch_savings=200,
                     epoch_horizon=0, stage_options={"trim_outputs": {**READS_BY_AGE, "cold_after_turns": 6, "cold_ref_chars": 0,
                                                                       "report_fresh_turns": 0}})
    epochs = []  # (request, read cut, report cut) at each epoch after the first
    for k, result in feed(body, config, _Memory()):
        if k > 4 and result.report.mode == "epoch":
            read, report = (dumps(result.body["messages"][i]).decode() for i in (2, 4))
            epochs.append((k, "ctxmill" in read, "ctxmill" in report))
    assert [cuts for _, *cuts in epochs] == [[False, True], [True, True]]  # the report, then the cold read
    assert epochs[1][0] - epochs[0][0] >= 6
