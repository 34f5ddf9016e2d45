"""nudges: remind the model to save what was decided, and to checkpoint when context is large.

- Medium tier and up: when a decision, constraint or fix (`compress.vocab.signals.cues.decision_kinds`,
  English and Chinese cues) was stated in the text of the last `window_turns` (2) turns, by the
  person or the model (host-injected `<system-reminder>` segments do not count), and no
  memory_* tool (`compress.vocab.tools.is_memory_tool`) was called since, one line is appended:
  `[ctxmill: recent turns hold a decision — store it with memory_store(type="decision", …) so
  it survives compaction]`.
- High tier: on every `checkpoint_every`-th (10) assistant turn, a checkpoint reminder.
- No reminder while an assistant message since the last person-written message holds thinking:
  an appended text block ends the provider's thinking turn, so it would drop those thinking
  blocks and the whole request after the first of them would be written to the cache again.
  Unless the request keeps all thinking (`StageContext.thinking_kept`: Claude Code 2.1 asks
  for `clear_thinking_20251015` with `keep: "all"`): then nothing is dropped and the wait
  would only hold the reminder back.

What must hold:
- Never above raw: the reminder is appended only when the request as sent, reminder included,
  is smaller than the request the client sent (`StageContext.saving`, counted by the runner as
  `tokens_after` and `tokens_before`); else it is held back and the decision says so. Once sent
  it is frozen with its message (below), and the messages before it keep their renderings (an
  epoch re-decides them only to save more), so what they saved still pays for it in later
  requests. The one stage that adds text elsewhere is `reread_pointers`, which shows the agent
  again a read it asked for and is shown cut (fidelity first; `tests/test_pipeline.py` checks
  every request of a session against raw).
- Only the newest user message changes, and only by one appended text block
  (`Stage.appends_to_newest`, checked by the runner); older messages never change. It must be
  the newest message but for system messages after it (`compress.model.newest_user_index`:
  Claude Code 2.1 sends its hooks' context as a system message after the person's prompt).
  Anthropic accepts text after tool_results there; an OpenAI `role: "tool"` message is a tool
  result and an assistant message is a prefill, so requests ending in those get no nudge
  (appending to an earlier user message would change a message the session has already
  rendered).
- No hidden state: whether an earlier request got a nudge is recomputed from the messages
  (each assistant message answers the request that ended just before it), so the cooldown
  (`cooldown_turns`, 6) is deterministic. An earlier request whose reminder was held back is
  told from the session's rendering of its last message (`StageContext.shown_strings`: no
  reminder in it), so its cues stay pending for the next request within the window (a decision
  in the person's first prompt, whose request has nothing to cut, is reminded of in the next
  one that has). A message the session does not know, or an epoch's re-rendering from the
  client's messages, holds no reminder: its cues count as not reminded. The replay resumes
  from a checkpoint the session's previous request left (`compress.prefix_scans`) only where no
  later message can change which requests ended before it, and after asking `sent` again what it
  went by: the same reminders as a replay from the first message.
- Cache: the session records the newest message as rendered, nudge included; on the next
  request that message is frozen and rendered from the record, so its nudge stays, byte for
  byte. A new epoch re-renders from the client's messages, which never hold a nudge.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import xxhash

from ccr.markers import format_inline
from compress.config import options_as
from compress.model import TEXT, TOOL_USE, Block, Message, newest_user_index
from compress.prefix_scans import PrefixScans
from compress.stagekit.stage import Stage, StageContext
from compress.tiers import Tier
from compress.vocab.injections import REMINDER_TAGS, remove_segments
from compress.vocab.signals.cues import DECISION_KINDS, decision_kinds
from compress.vocab.tools import is_memory_tool

WINDOW_TURNS = 2
COOLDOWN_TURNS = 6
CHECKPOINT_EVERY = 10

MEMORY_TYPE = {"decision": "decision", "constraint": "constraint", "fix": "gotcha"}
"""The memory entry type to suggest for each kind of cue."""

CHECKPOINT_NUDGE = format_inline("the context is large — save the task state before the host compacts it: call the "
                                 "ctxmill checkpoint tool (or run /checkpoint)")


REMINDER_PREFIXES = (format_inline("recent turns hold ")[:-1], CHECKPOINT_NUDGE)


@dataclass(frozen=True, slots=True)
class Options:
    window_turns: int = WINDOW_TURNS
    cooldown_turns: int = COOLDOWN_TURNS
    checkpoint_every: int = CHECKPOINT_EVERY


def reminders() -> tuple[str, ...]:
    """Every reminder this stage can write (the hooks refuse them in a file or a command)."""
    subsets = (c for n in range(1, len(DECISION_KINDS) + 1) for c in itertools.combinations(DECISION_KINDS, n))
    return (CHECKPOINT_NUDGE, *(memory_nudge(kinds) for kinds in subsets))


def memory_nudge(kinds: tuple[str, ...]) -> str:
    """The reminder for cues of `kinds` (a non-empty subset of DECISION_KINDS, in that order)."""
    what = " and a ".join(kinds)
    it = "it" if len(kinds) == 1 else "each"
    types = "|".join(f'"{MEMORY_TYPE[k]}"' for k in kinds)
    return format_inline(f"recent turns hold a {what} — store {it} with memory_store(type={types}, …) so it survives compaction")


_CUE_MEMO: dict[int, tuple[str, ...]] = {}
"""Content hash of a text -> its cues. Every request replays the whole history, so without this
each request would scan all earlier texts again; with it only new texts are scanned. A pure
memo (results never depend on it), cleared when it reaches _CUE_MEMO_SIZE entries."""
_CUE_MEMO_SIZE = 16_384


def _text_cues(text: str) -> tuple[str, ...]:
    key = xxhash.xxh3_128_intdigest(text.encode("utf-8", "surrogatepass"))
    kinds = _CUE_MEMO.get(key)
    if kinds is None:
        if len(_CUE_MEMO) >= _CUE_MEMO_SIZE:
            _CUE_MEMO.clear()
        kinds = _CUE_MEMO[key] = decision_kinds(remove_segments(text, REMINDER_TAGS)[0])
    return kinds


def _request_ends(messages: list[Message]) -> list[bool]:
    """Whether each message is a user message that ended a request: the next message that is
    not a system message is an assistant message (the model's answer), or there is none."""
    ends = [False] * len(messages)
    answered = True  # the messages after the position hold no other message than system ones
    for i in range(len(messages) - 1, -1, -1):
        role = messages[i].role
        if role == "user":
            ends[i] = answered
        if role != "system":
            answered = role == "assistant"
    return ends


@dataclass(frozen=True, slots=True)
class _Replay:
    """Where a replay of the requests (`memory_nudges`) stands before message `at`."""

    at: int = 0
    stated: tuple[tuple[str, int], ...] = ()
    """kind -> turn of the latest statement not yet saved or reminded."""
    last_nudge: int | None = None
    thinking: bool = False
    """An assistant message since the last person-written one holds thinking."""
    given: tuple[tuple[int, tuple[str, ...]], ...] = ()
    asked: tuple[tuple[int, bool], ...] = ()
    """The answers of `sent` the replay went by, checked again before it resumes from here."""


def memory_nudges(messages: list[Message], opts: Options, thinking_kept: bool = False,
                  sent: Callable[[int], bool] | None = None, scans: PrefixScans | None = None,
                  unchanged: int = 0) -> dict[int, tuple[str, ...]]:
    """Index of the last user message of every request that gets (or got) a memory reminder ->
    the kinds it reminds of. Replays all requests so far (a request ends at each user message
    an assistant message answered, and at the newest), so the cooldown needs no state but
    `sent`: whether an earlier request's last message was sent with its reminder (None: every
    reminder due was sent). One that was due but not sent (held back below raw) leaves its cues
    pending for the next request, within the window. `scans`: checkpoints of earlier replays
    (`compress.prefix_scans`), to resume from and to leave one in, within the first
    `unchanged` messages (those the run hands on as the session parsed them); the result is the
    same without them."""
    key = ("nudges.memory_nudges", opts, thinking_kept, sent is None)
    saved = scans.resume(key, messages) if scans is not None else None
    start = saved if saved is not None and (sent is None or all(sent(i) == a for i, a in saved.asked)) else _Replay()
    ends = _request_ends(messages[start.at:])
    if start.at and not any(ends):  # the newest request may end before the checkpoint
        start, ends = _Replay(), _request_ends(messages)
    newest = start.at + max((i for i, end in enumerate(ends) if end), default=-1)
    # a checkpoint within what the run has not changed, where what follows decides whether the
    # messages before it ended a request, and before the newest request's end
    mark = next((i for i in range(min(unchanged - 1, newest), start.at, -1) if messages[i].role != "system"), -1)
    stated = dict(start.stated)
    last_nudge = start.last_nudge
    given = dict(start.given)
    thinking = start.thinking
    asked = list(start.asked)
    for i in range(start.at, len(messages)):
        if i == mark and scans is not None:
            scans.store(key, messages[:i + 1], _Replay(i, tuple(stated.items()), last_nudge, thinking,
                                                       tuple(given.items()), tuple(asked)))
        msg = messages[i]
        if msg.role not in ("user", "assistant"):
            continue
        thinking = not thinking_kept and (msg.has_thinking or (thinking and not msg.has_user_text))
        saved_now = False
        for b in msg.blocks:
            if b.kind == TEXT and not is_reminder(b.text):
                for kind in _text_cues(b.text):
                    stated[kind] = msg.turn
            elif b.kind == TOOL_USE and is_memory_tool(b.tool_name):
                saved_now = True
        if saved_now:
            stated.clear()
        if not stated or thinking or not ends[i - start.at]:
            continue
        recent = tuple(k for k in DECISION_KINDS if k in stated and msg.turn - stated[k] < opts.window_turns)
        if not recent or (last_nudge is not None and msg.turn - last_nudge < opts.cooldown_turns):
            continue
        if sent is not None and i != newest:
            answer = sent(i)
            asked.append((i, answer))
            if not answer:
                continue
        given[i] = recent
        last_nudge = msg.turn
        stated.clear()
    return given


def _thinking_turn_open(messages: list[Message]) -> bool:
    """An assistant message after the last person-written message holds thinking."""
    for msg in reversed(messages):
        if msg.has_user_text:
            return False
        if msg.has_thinking:
            return True
    return False


def is_reminder(text: str) -> bool:
    """A text block this stage appended (its own reminders are no cues, and a message that
    already holds one gets no second: running the output through again changes nothing)."""
    return text.startswith(REMINDER_PREFIXES)


def nudge_text(messages: list[Message], tier: Tier, opts: Options, thinking_kept: bool = False,
               sent: Callable[[int], bool] | None = None, scans: PrefixScans | None = None,
               unchanged: int = 0) -> str:
    """The reminder lines for the newest user message ('' for none); `sent`, `scans` and
    `unchanged` as for `memory_nudges`."""
    target = newest_user_index(messages)
    if target < 0 or any(b.kind == TEXT and is_reminder(b.text) for b in messages[target].blocks):
        return ""
    lines = []
    kinds = memory_nudges(messages, opts, thinking_kept, sent, scans, unchanged).get(target)
    if kinds:
        lines.append(memory_nudge(kinds))
    turn = messages[target].turn
    if (tier >= Tier.HIGH and turn > 0 and turn % opts.checkpoint_every == 0
            and (thinking_kept or not _thinking_turn_open(messages))):
        lines.append(CHECKPOINT_NUDGE)
    return "\n".join(lines)


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    opts = options_as(Options, ctx.config.options("nudges"))

    def sent(index: int) -> bool:
        return any(is_reminder(s) for s in ctx.shown_strings(index))

    text = nudge_text(messages, ctx.tier, opts, ctx.thinking_kept, sent, ctx.scans, ctx.unchanged)
    if not text:
        return messages
    target = newest_user_index(messages)
    newest = messages[target]
    block = Block(TEXT, raw={"type": "text", "text": text}, text=text)
    out = [*messages[:target], newest.with_blocks(newest.blocks + (block,)), *messages[target + 1:]]
    if ctx.saving(out) <= 0:
        ctx.note(target, "held a reminder back: with it the request would not be smaller than raw")
        return messages
    ctx.note(target, "appended a reminder to the newest user message")
    return out


STAGE = Stage("nudges", run, Tier.MEDIUM, appends_to_newest=True, options=Options)
