"""The stage contract: a pure function (messages, context) -> messages.

A stage may change only the messages whose `ctx.mutable[i]` is true (not frozen by the
session, not in the protected tail), never user-written text, never the results of protected
tools, and tool *inputs* only if it is one of the stages made for superseded or failed inputs
(`supersede_inputs`, `purge_errors`; see `compress.stagekit.inputnotes`). It does no I/O
except `ctx.store(...)`, which buffers originals for CCR; the pipeline commits them before any
marker leaves the process. It returns a new list; unchanged messages are the same objects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ccr.keys import make_key
from ccr.markers import find_markers, has_marker
from compress.config import CompressConfig
from compress.model import TOOL_RESULT, Block, Message
from compress.prefix_scans import PrefixScans
from compress.stagekit.line_numbers import NUMBERS_THINNED
from compress.stagekit.memo import MEMO_BYTES, MEMO_VALUE_BYTES, TextMemo
from compress.tiers import Tier
from compress.vocab.tools import is_protected_tool
from ground.redact import redact

log = logging.getLogger("ctxmill.compress")

_PLACEHOLDER_KEY = "0" * 32

INJECTION_SUMMARY_PREFIX = "removed injected "
NOT_A_CUT = (INJECTION_SUMMARY_PREFIX, NUMBERS_THINNED)
"""Summary prefixes of markers that do not count as compressing the content (strip_injections
removing host boilerplate, decide_on_arrival thinning line numbers): later stages may still
shorten such a block."""


def is_compressed(text: str) -> bool:
    """Whether `text` carries a marker of a stage that cut its content. Every marker holds
    "ctxmill: " before its summary, so when each of those starts a `NOT_A_CUT` summary (a thinned
    read) the answer needs no parse."""
    mentions = text.count("ctxmill: ")
    if not mentions or mentions == sum(text.count(f"ctxmill: {prefix}") for prefix in NOT_A_CUT):
        return False
    return has_marker(text) and any(not m.summary.startswith(NOT_A_CUT) for m in find_markers(text))

StageFn = Callable[[list[Message], "StageContext"], list[Message]]


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    run: StageFn
    min_tier: Tier = Tier.ALWAYS
    may_edit_inputs: bool = False
    """Only the stages made for superseded or failed tool inputs may change them."""
    appends_to_newest: bool = False
    """The one exception to the protected tail: the stage may append exactly one text block to
    the newest message when that is a user message (existing blocks unchanged). The runner runs
    such a stage even when no message is mutable, and checks the append."""
    decides_on_arrival: bool = False
    """The other exception: the stage may change the tool results (and, if it `may_edit_inputs`,
    the tool inputs) of every message the run decides, protected tail included, because what it
    makes of them there is a pure function of the call and its result (the same bytes at every
    later epoch), or, for `reread_pointers`, also of how the session shows an earlier message
    the run does not decide (the same bytes at every later epoch that does not re-decide that
    one too). The runner gives it `ctx.mutable` true from the run's first decided message on,
    and `ctx.past_tail` for what other stages may change."""
    options: type | None = None
    """The stage's options dataclass (None: it takes none): the keys and types a config file may
    give it under `[compress.stages.<name>]`, checked when the file is loaded
    (`compress.stagekit.stage_options`); the stage reads them with `options_as(cls, ...)`."""


REDACTED = TextMemo(max_bytes=MEMO_BYTES, max_value_bytes=MEMO_VALUE_BYTES)
"""Originals as stored, by content hash: an epoch's trial re-decides old outputs whose
originals were redacted before, and scanning them for secrets again is most of its time."""


def stored_form(text: str, redact_extra: tuple = (), redact_allow: tuple = ()) -> tuple[str, str]:
    """`text` as CCR stores it, `ground.redact.redact(text, ...)` (remembered: `REDACTED`, by the
    text's own CCR key), and the key it is stored under: the text's own when nothing was redacted."""
    key = make_key(text)
    stored: str = REDACTED.get_or_compute((key, tuple(redact_extra), tuple(redact_allow)),  # type: ignore[assignment]
                                          lambda: redact(text, redact_extra, redact_allow))
    return stored, key if stored == text else make_key(stored)


@dataclass(slots=True)
class PendingOriginals:
    """Originals a run wants in CCR, in order, keyed by content hash; committed by the pipeline.

    Secrets are redacted before an original is buffered, and the key is the hash of the
    redacted text, so a marker resolves to exactly what is stored and no secret reaches disk."""

    entries: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    redact_extra: tuple = ()
    redact_allow: tuple = ()

    def stored_form(self, text: str) -> tuple[str, str]:
        """What `put(text)` stores and the key it returns (nothing is stored)."""
        return stored_form(text, self.redact_extra, self.redact_allow)

    def put(self, text: str, hint: str | None = None, form: tuple[str, str] | None = None) -> str:
        """Buffer `text` for CCR and return its key; `form`: its `stored_form`, if known already."""
        stored, key = form or self.stored_form(text)
        self.entries.setdefault(key, (stored, hint and redact(hint, self.redact_extra, self.redact_allow)))
        return key


@dataclass(slots=True)
class StageContext:
    config: CompressConfig
    tier: Tier
    anchor_turn: int
    """Ages are measured from this turn (the epoch's anchor), never from the newest turn."""
    mutable: tuple[bool, ...]
    originals: PendingOriginals
    count_tokens: Callable[[str], int]
    stage: str = ""
    thinking_kept: bool = False
    """The request asks the provider to keep every earlier thinking block (Anthropic
    `context_management` `clear_thinking_20251015` with `keep: "all"`, as Claude Code 2.1 sends):
    old thinking is then read by the model and billed, not dropped (`compress.provider_cache`)."""
    decisions: list[tuple[int, str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    past_tail: tuple[bool, ...] = ()
    """The messages a stage that does not decide on arrival may change (not frozen, not in the
    protected tail); equal to `mutable` for such a stage."""
    shown_cut: Callable[[int], bool] = lambda index: False
    """Whether the request shows message `index`, one this run does not decide, with part of a
    tool result cut (the session's rendering of it holds a marker of a cut, `is_compressed`)."""
    shown_strings: Callable[[int], tuple[str, ...]] = lambda index: ()
    """The strings of the session's rendering of message `index`, as an earlier request sent it
    (empty for a message the session has not recorded): what a stage that adds text gave before."""
    saving: Callable[[list[Message]], int] = lambda messages: 0
    """Tokens the request saves against the raw request (the client's messages) when it is sent
    as `messages` (a stage's input or output), counted as the runner counts the request's
    `tokens_before` and `tokens_after`, but for the thinking the provider drops, billed on
    neither side (`compress.runner.plan.Planner.saving`), and 0 when the blocks `messages` add
    would leave the last request's cached prefix out of the provider's lookback where the raw
    request still reaches it (the provider would write the whole request again): a stage that
    adds text keeps it only while this stays above 0, so no request is sent larger than raw."""

    unchanged: int = 0
    """The first this many messages are the session's parsed messages, which no stage of this run
    changes (the run decides from the next one on)."""
    scans: PrefixScans = field(default_factory=PrefixScans)
    """Checkpoints of scans over the messages that a stage may resume (`compress.prefix_scans`;
    the session's, so the next run of it resumes from what this one left)."""

    def age(self, msg: Message) -> int:
        """Assistant turns between a message and the anchor (0 or less: the current turn)."""
        return self.anchor_turn - msg.turn

    def store(self, original: str, hint: str | None = None) -> str:
        """Buffer an original for CCR and return its key. Call before building its marker."""
        return self.originals.put(original, hint)

    def worth_it(self, original: str, compressed: str, relative: bool = True, min_fraction: float = 0.0,
                 min_chars: int | None = None) -> bool:
        """A lossy result is kept only if it saves enough characters (`min_chars`, default the
        config's) and, unless `relative` is off, a large enough fraction of the original: the
        configured one, or a stage's stricter `min_fraction`; and it must hold fewer tokens."""
        return (self._saves_chars(original, compressed, relative, min_fraction, min_chars)
                and self.count_tokens(compressed) < self.count_tokens(original))  # markers are token-dense

    def _saves_chars(self, original: str, compressed: str, relative: bool, min_fraction: float,
                     min_chars: int | None) -> bool:
        saved = len(original) - len(compressed)
        enough = saved >= (self.config.min_saving_chars if min_chars is None else min_chars)
        fraction = max(self.config.min_saving_fraction, min_fraction)
        return enough and not (relative and saved < fraction * len(original))

    def lossy(self, original: str, build: Callable[[str], str], hint: str | None = None,
              relative: bool = True, min_fraction: float = 0.0, min_chars: int | None = None) -> str:
        """`build(key)` with the original stored in CCR under `key`, if that saves enough;
        otherwise the original. `build` must give the same length for any key. A placeholder key
        rules out, before the original is redacted for its key, what cannot save enough; the
        rendering with the real key is judged again, since the token count of a key depends on
        its digits (the estimator's count of 32 zeros is 15 tokens below a typical key's). Each
        is `worth_it`; the original is counted once for both (a text under
        `compress.runner.message_tokens.CountOnce.LONG` is not remembered between counts)."""
        trial = build(_PLACEHOLDER_KEY)
        if not self._saves_chars(original, trial, relative, min_fraction, min_chars):
            return original
        before = self.count_tokens(original)
        if self.count_tokens(trial) >= before:
            return original
        form = self.originals.stored_form(original)
        text = build(form[1])
        if self.count_tokens(text) >= before:  # the trial's length (`build`'s contract): only its tokens differ
            return original
        self.originals.put(original, hint, form)
        return text

    @staticmethod
    def rerun_hint(result: Block) -> str:
        """For a tool_result's original in CCR: the call to re-run once it has expired."""
        from compress.vocab.calls import rerun_hint

        return rerun_hint(result.tool_name, result.call_input)

    def note(self, index: int, decision: str) -> None:
        self.decisions.append((index, self.stage, decision))

    def may_compress_result(self, block: Block) -> bool:
        """A tool_result a stage may shorten: not a protected tool's, not already compressed
        (a marker other than an injection removal's means some stage already cut it)."""
        return (
            block.kind == TOOL_RESULT
            and not is_protected_tool(block.tool_name, self.config.protected_tools, block.call_input)
            and not is_compressed(block.result_text)
        )

    def failed(self, index: int, exc: BaseException) -> None:
        message = f"stage {self.stage} skipped message {index}: {type(exc).__name__}: {exc}"
        log.warning(message)
        self.errors.append(message)


def each_mutable(messages: list[Message], ctx: StageContext,
                 fn: Callable[[int, Message], Message]) -> list[Message]:
    """Apply `fn` to every mutable message; a message whose `fn` raises stays as it was."""
    out = list(messages)
    for i, msg in enumerate(messages):
        if not ctx.mutable[i]:
            continue
        try:
            out[i] = fn(i, msg)
        except Exception as exc:  # noqa: BLE001 - a failing stage must not take the request down
            ctx.failed(i, exc)
    return out


def _each_noted(messages: list[Message], ctx: StageContext, fn: Callable[[int, Message], Message],
                decision: str) -> list[Message]:
    def apply(i: int, msg: Message) -> Message:
        out = fn(i, msg)
        if out is not msg:
            ctx.note(i, decision)
        return out

    return each_mutable(messages, ctx, apply)


def each_block(messages: list[Message], ctx: StageContext, fn: Callable[[Message, Block], Block],
               decision: str) -> list[Message]:
    """Apply `fn(msg, block)` to every block of every mutable message (as `each_mutable`) and
    note `decision` for each message that changed."""
    return _each_noted(messages, ctx, lambda i, msg: msg.with_blocks([fn(msg, b) for b in msg.blocks]), decision)


BlockEdit = Callable[[Block], Block]


def edit_blocks(messages: list[Message], ctx: StageContext, edits: Mapping[int, Mapping[int, BlockEdit]],
                decision: str) -> list[Message]:
    """Apply `edits[message index][block index]` to the mutable messages (other entries are
    ignored) and note `decision` for each message that changed; a message whose edit raises
    stays as it was."""

    def apply(i: int, msg: Message) -> Message:
        todo = edits.get(i)
        if not todo:
            return msg
        return msg.with_blocks([todo[j](b) if j in todo else b for j, b in enumerate(msg.blocks)])

    return _each_noted(messages, ctx, apply, decision)
