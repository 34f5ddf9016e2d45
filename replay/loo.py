"""Leave-one-project-out: judge every threshold the replay helps choose on projects it was not
chosen on.

A project is the `OWNER__REPO` prefix of a session file's name (`project_of`); sessions of one
project share a code base, a person and their habits, so a rule chosen on some of them is not
tested by the others. The thresholds are a small grid of chain configurations (`Point`: stage
options, `CompressConfig.stage_options`); every session is replayed once per point. Then:

- in-sample: the point chosen on all projects (`choose`), scored on all of them;
- leave-one-project-out: for each project, the point chosen on the other projects, scored on
  the held-out project's sessions; the held-out scores summed over all projects.

Choice rule (`choose`), on sums of costs over the sessions (not means of ratios), the targets
in the order they matter: the cheapest point (effective cost) among those that keep the needed
lines (`keeps_needed`: at least `MIN_NEEDED` of them, and `MIN_NEEDED_OLD` of those from sources
11+ messages old) and cost no more than the decide-once cap; when none does, the point that keeps
the most needed lines among those that cost no more than the cap (then the cheapest of them);
when none does either, the cheapest. Ties go to the earlier point of the grid.
What must hold: a held-out project's sessions never enter the choice made for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay.needed import Needed
from replay.runner import ReplayReport

MIN_NEEDED = 0.97
"""Overall share of the needed lines kept (a target, and the choice's first condition)."""
MIN_NEEDED_OLD = 0.9
"""Of the needed lines whose newest source is 11+ messages old (the `11+` age bucket; the choice only)."""
MAX_EFFECTIVE = 0.622
"""Overall effective cost ratio not to exceed (what the shipped engine cost before issue 44)."""
SESSION_NEEDED = 0.95
NEEDED_SLACK = 0.02
"""A session with enough needed lines keeps at least the cap's share minus this, or `SESSION_NEEDED`."""


@dataclass(frozen=True)
class Point:
    """One chain configuration of the grid: a name and stage options (stage -> option -> value)."""

    name: str
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def project_of(source: str) -> str:
    """The `OWNER__REPO` prefix of a session file's name (the whole stem when it has no `__`)."""
    stem = Path(source).name.split(".")[0]
    parts = stem.split("__")
    return "__".join(parts[:2]) if len(parts) > 2 else parts[0]


@dataclass
class Score:
    """Sums over sessions of one side: raw cost, modelled and effective cost, needed lines."""

    sessions: int = 0
    raw: float = 0.0
    cost: float = 0.0
    effective: float = 0.0
    needed: Needed = field(default_factory=Needed)

    def add(self, report: ReplayReport, side: str = "ctxmill") -> Score:
        stats = report.sides()[side]
        self.sessions += 1
        self.raw += report.raw.cost
        self.cost += stats.cost
        self.effective += stats.effective_cost
        self.needed.merge(stats.needed)
        return self

    @property
    def modelled_ratio(self) -> float:
        return self.cost / self.raw if self.raw else 1.0

    @property
    def effective_ratio(self) -> float:
        return self.effective / self.raw if self.raw else 1.0


def score(reports: Iterable[ReplayReport], side: str = "ctxmill") -> Score:
    total = Score()
    for report in reports:
        total.add(report, side)
    return total


Grid = Mapping[str, Mapping[str, ReplayReport]]
"""Point name -> session source -> its replay with that point (every point holds every session)."""


def choose(grid: Grid, sessions: Iterable[str]) -> str:
    """The point chosen on `sessions` (the rule in the module docstring)."""
    chosen = list(sessions)
    scores = {name: score(reports[s] for s in chosen) for name, reports in grid.items()}
    any_point = next(iter(grid.values()))
    cap = score((any_point[s] for s in chosen), "cap")  # the cap does not depend on the point
    cheapest = sorted(scores, key=lambda name: scores[name].effective_ratio)
    keeping = [n for n in cheapest if keeps_needed(scores[n].needed) and scores[n].effective_ratio <= cap.effective_ratio]
    if keeping:
        return keeping[0]
    affordable = [n for n in cheapest if scores[n].effective_ratio <= cap.effective_ratio]
    return max(affordable, key=lambda n: scores[n].needed.fraction()) if affordable else cheapest[0]


def keeps_needed(needed: Needed) -> bool:
    """Both needed-lines targets: `MIN_NEEDED` overall and `MIN_NEEDED_OLD` of the 11+ bucket."""
    return needed.fraction() >= MIN_NEEDED and needed.fraction("11+") >= MIN_NEEDED_OLD


def by_project(sessions: Iterable[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for source in sessions:
        out.setdefault(project_of(source), []).append(source)
    return out


@dataclass
class Validation:
    """In-sample and leave-one-project-out choices and scores."""

    in_sample: str
    """The point chosen on all projects."""
    held_out: dict[str, str]
    """Project -> the point chosen without it."""
    projects: dict[str, list[str]]

    def point(self, source: str, held_out: bool) -> str:
        """The point a session is scored with: in-sample, or chosen without its project."""
        return self.held_out[project_of(source)] if held_out else self.in_sample

    def reports(self, grid: Grid, held_out: bool, sessions: Iterable[str] | None = None) -> list[ReplayReport]:
        """The replays of `sessions` (default all) with the points they are scored with."""
        chosen = [s for members in self.projects.values() for s in members] if sessions is None else sessions
        return [grid[self.point(s, held_out)][s] for s in chosen]


def validate(grid: Grid) -> Validation:
    sessions = list(next(iter(grid.values())))
    projects = by_project(sessions)
    held_out = {project: choose(grid, [s for other, members in projects.items() if other != project for s in members])
                for project in projects}
    return Validation(choose(grid, sessions), held_out, projects)


MIN_SESSION_NEEDED = 20
"""Sessions with at least this many needed lines are held to the per-session needed target."""
MIN_SESSION_REQUESTS = 100
"""Sessions with at least this many requests are held to the per-session cost target."""


def target_misses(reports: Iterable[ReplayReport]) -> list[str]:
    """Which of the targets the docs state a set of replays misses (one line each; [] when all
    are met): per session, needed lines kept >= the cap's - `NEEDED_SLACK` or >= `SESSION_NEEDED`
    (sessions with >= 20 needed lines), effective cost <= the cap's (>= 100 requests) and <= raw;
    overall, needed >= `MIN_NEEDED` and effective <= `MAX_EFFECTIVE`."""
    reports = list(reports)
    out = []
    for r in reports:
        name, mine, cap = Path(r.source).name, r.compressed, r.cap
        floor = min(cap.needed.fraction() - NEEDED_SLACK, SESSION_NEEDED)
        if sum(mine.needed.total.values()) >= MIN_SESSION_NEEDED and mine.needed.fraction() < floor - 1e-9:
            out.append(f"{name}: needed {mine.needed.fraction():.3f} < cap {cap.needed.fraction():.3f}")
        if r.requests >= MIN_SESSION_REQUESTS and r.ratio(mine, True) > r.ratio(cap, True):
            out.append(f"{name}: effective {r.ratio(mine, True):.3f} > cap {r.ratio(cap, True):.3f}")
        if r.ratio(mine, True) > 1.0:
            out.append(f"{name}: effective {r.ratio(mine, True):.3f} > raw")
    overall = score(reports)
    if overall.needed.fraction() < MIN_NEEDED:
        out.append(f"overall needed {overall.needed.fraction():.3f} < {MIN_NEEDED}")
    if overall.effective_ratio > MAX_EFFECTIVE:
        out.append(f"overall effective {overall.effective_ratio:.3f} > {MAX_EFFECTIVE}")
    return out
