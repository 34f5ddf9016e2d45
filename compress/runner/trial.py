"""An epoch trial: the plan an epoch would send, built and judged against the run's own plan.

`compress.runner.epochs.epoch_trial` says when an epoch is worth trying and from which message; a
`Trial` builds that plan (and, from a cached request, the later start where it gains most:
`best_start`) and says whether it pays off (`pays_off`). Building it is a second full plan of
the request, most of a run's time, and most trials do not pay. So a trial whose epoch would
make the provider write what it could have read (`EpochChoice.read_end` set) is judged after
the run's answer (`compress.state.session.Session.settle`) when the request only adds to the last
one: the run sends its own plan, and when the trial pays the session starts the epoch then, so
the next request is the first one sent with it (its new messages are then written twice: the
price of the delay). When the cached request the epoch starts after may leave the provider's
lookback by the next request, the trial still waits, and is priced as the rewrite of everything
the provider would then write (`Trial.out_of_reach`); a trial that could not pay for that
even saving every token from its start on is not built at all (`Trial.could_pay`). Any other trial is judged at once: when
the cache expired, no cached request is within reach, or the provider reads less than the last
request, it writes that much anyway, and one request later it would have to write it again.

What must hold: a trial judged after the answer decides exactly as one judged during the run
(the same plan, records and cached prefixes as when the run began: `Trial` holds its own copy
of them); the bytes the epoch sends from the next request on are those the same epoch sends
when it starts during the run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from compress.config import CompressConfig
from compress.provider_cache import CacheLife
from compress.runner.epochs import EpochChoice, best_start, pays_off, rewrite_could_pay
from compress.runner.plan import Plan, Planner


def worth_deferring(provider: str, tokens: int, config: CompressConfig) -> bool:
    """Whether this request's trial may wait for its answer (`Trial.after_answer`): the request
    is large (`CompressConfig.trials_after_answer_from`) and the provider is Anthropic
    (OpenAI-style providers read any earlier prefix, so their epochs re-decide from far back,
    where a delay makes the provider write a request's large new outputs twice: Codex sessions
    0.792 -> 0.816 effective)."""
    threshold = config.trials_after_answer_from
    return 0 < threshold <= tokens and provider == "anthropic"


@dataclass
class Trial:
    planner: Planner
    choice: EpochChoice
    current: Plan
    """The run's own plan (its renderings are what the trial must beat)."""
    cached: list[int]
    """Where the provider holds a cached prefix of the request (`cached_prefixes`), for
    `best_start`; empty when the trial re-runs from the start."""
    turn: int
    """The request's newest turn: the epoch's anchor."""
    config: CompressConfig
    life: CacheLife
    last_end: int = 0
    """Where the session's last request ended, when the provider still holds it as sent (0:
    it does not: the client changed a message, or a new prompt dropped earlier thinking)."""
    deferrable: bool = False
    """A second plan of this request costs enough to move off the request path (`worth_deferring`)."""
    out_of_reach: bool = False
    """The cached request the epoch starts after may leave the provider's lookback by the next
    request (`in_reach_next_time` is false): an epoch judged after the answer, first sent with
    that request, is then priced as a rewrite of everything up to the last request."""

    @property
    def after_answer(self) -> bool:
        """Whether the trial may wait for the run's answer: the request only adds to the last
        one, which the provider reads whole (`choice.read_end` is its end), so sending this
        request as it is writes only its new messages, and an epoch one request later costs
        writing those again. Otherwise it is judged at once: a trial from an expired cache or
        with no cached request in reach costs nothing extra now, and when the provider reads
        less than the last request it writes the rest anyway, which a later epoch would make
        it write twice. When one more request may push the cached request the epoch starts after
        out of the provider's lookback (`out_of_reach`), the provider would then write it all, and
        the trial judged after the answer is priced so (`judge`): it pays only if it pays for
        that too."""
        return self.deferrable and bool(self.choice.read_end) and self.choice.read_end == self.last_end

    @property
    def could_pay(self) -> bool:
        """False when no plan of this trial can pay off (`rewrite_could_pay`, for a trial judged
        after the answer and priced as a rewrite: `out_of_reach`), so it need not be judged: it
        would leave the session as it is. Otherwise True."""
        return not (self.out_of_reach and self.after_answer) or rewrite_could_pay(
            self.choice, self.current.out_tokens, self.turn, self.config, self.life)

    def judge(self) -> tuple[Plan | None, int]:
        """(The epoch's plan when it pays off, else None; after a trial that did not, the
        compressible tokens the next one waits for: `EpochChoice.retry_at`.)"""
        choice, trial = self.choice, self.planner.plan(self.choice.start, self.turn)
        if choice.cached_end:
            later = best_start(choice, self.cached, self.current.out_tokens, trial.out_tokens, self.turn,
                               self.config, self.life)
            if later.start != choice.start:
                choice, trial = later, self.planner.plan(later.start, self.turn)
        priced = replace(choice, cached_end=0) if self.out_of_reach and self.after_answer else choice
        if pays_off(priced, self.current.out_tokens, trial.out_tokens, self.turn, self.config, self.life):
            return trial, 0
        return None, choice.retry_at()

    def saving(self, plan: Plan) -> str:
        """The epoch reason of a trial that paid off."""
        return f"saves {self.current.out_total - plan.out_total:,} tokens"
