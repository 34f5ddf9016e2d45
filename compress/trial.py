"""An epoch trial: the plan an epoch would send, built and judged against the run's own plan.

`compress.epochs.epoch_trial` says when an epoch is worth trying and from which message; a
`Trial` builds that plan (and, from a cached request, the later start where it gains most:
`best_start`) and says whether it pays off (`pays_off`). Building it is a second full plan of
the request, most of a run's time, and most trials do not pay. So a trial whose epoch would
make the provider write what it could have read (`EpochChoice.read_end` set) is judged after
the run's answer (`compress.session.Session.settle`): the run sends its own plan, and when the trial
pays the session starts the epoch then, so the next request is the first one sent with it. A
trial that costs the provider nothing extra (the cache expired, or no cached request is within
its lookback: it writes the whole request anyway) is judged at once, since one request later
the provider would have to write it all again.

What must hold: a trial judged after the answer decides exactly as one judged during the run
(the same plan, records and cached prefixes as when the run began: `Trial` holds its own copy
of them); the bytes the epoch sends from the next request on are those the same epoch sends
when it starts during the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from compress.config import CompressConfig
from compress.epochs import EpochChoice, best_start, pays_off
from compress.plan import Plan, Planner
from compress.provider_cache import CacheLife


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

    @property
    def after_answer(self) -> bool:
        """Whether the trial may wait for the run's answer: its epoch rewrites what the provider
        could have read from its cache, so the trial must pay back those writes and usually
        does not (a trial from an expired cache, or with no cached request in reach, costs
        nothing extra: it is judged at once)."""
        return bool(self.choice.read_end)

    def judge(self) -> tuple[Plan | None, int]:
        """(The epoch's plan when it pays off, else None; after a trial that did not, the
        compressible tokens the next one waits for: `EpochChoice.retry_at`.)"""
        choice, trial = self.choice, self.planner.plan(self.choice.start, self.turn)
        if choice.cached_end:
            later = best_start(choice, self.cached, self.current.out_tokens, trial.out_tokens, self.turn,
                               self.config, self.life)
            if later.start != choice.start:
                choice, trial = later, self.planner.plan(later.start, self.turn)
        if pays_off(choice, self.current.out_tokens, trial.out_tokens, self.turn, self.config, self.life):
            return trial, 0
        return None, choice.retry_at()

    def saving(self, plan: Plan) -> str:
        """The epoch reason of a trial that paid off."""
        return f"saves {self.current.out_total - plan.out_total:,} tokens"
