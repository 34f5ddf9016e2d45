"""Leave-one-project-out (`replay.loo`): projects from file names, the choice rule, that a held-out
project never enters its own choice, and the targets a set of replays misses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.loo import MAX_EFFECTIVE, MIN_NEEDED, NEEDED_SLACK, choose, project_of, target_misses, validate
from replay.needed import Needed
from replay.pricing import SideStats
from replay.runner import ReplayReport


def _needed(total: int, kept: int, bucket: str = "11+") -> Needed:
    needed = Needed()
    needed.total[bucket], needed.kept[bucket] = total, kept
    return needed


def _report(source: str, cost: float, needed_total: int = 0, needed_kept: int = 0, requests: int = 10,
            cap_cost: float = 100.0, cap_kept: int | None = None) -> ReplayReport:
    report = ReplayReport(source, "claude-code", "anthropic", "test", requests=requests)
    report.raw = SideStats(cost=100.0, needed=_needed(needed_total, needed_total))
    report.compressed = SideStats(cost=cost, needed=_needed(needed_total, needed_kept))
    report.cap = SideStats(cost=cap_cost, needed=_needed(needed_total, needed_total if cap_kept is None else cap_kept))
    return report


def test_project_is_the_owner_and_repo_prefix_of_the_file_name():
    assert project_of("/c/claude-code/marot__spotter__258c.jsonl") == "marot__spotter"
    assert project_of("xiaomoziyi__session-logs__19-payment-kit-5995.jsonl") == "xiaomoziyi__session-logs"
    assert project_of("swe-agent/function_calling_simple.traj") == "function_calling_simple"


def test_choice_keeps_the_needed_lines_cheapest_within_the_caps_cost_else_keeps_most_within_it():
    over = {"cheap-lossy": {"a": _report("a", 50, 100, 80)}, "safe": {"a": _report("a", 90, 100, 97)},
            "safer": {"a": _report("a", 95, 100, 98)},
            "safest-but-dearer-than-cap": {"a": _report("a", 110, 100, 100)}}
    assert choose(over, ["a"]) == "safe"  # the cheapest keeping 0.97 within the cap's cost
    short = {"cheap-lossy": {"a": _report("a", 50, 100, 80)}, "lossy": {"a": _report("a", 90, 100, 93)},
             "safest-but-dearer-than-cap": {"a": _report("a", 110, 100, 100)}}
    assert choose(short, ["a"]) == "lossy"  # none keeps 0.97 within it: the most needed within the cap's cost
    cheap, dearer = _report("a", 80, 100, 97), _report("a", 90, 100, 97)
    cheap.compressed.needed.total.update({"0-3": 80, "11+": 20})
    cheap.compressed.needed.kept.update({"0-3": 80, "11+": 17})  # 0.97 overall, 0.85 of the 11+ lines
    assert choose({"cheap-old-lost": {"a": cheap}, "dearer": {"a": dearer}}, ["a"]) == "dearer"
    dear = {"x": {"a": _report("a", 130, 100, 100)}, "y": {"a": _report("a", 120, 100, 90)}}
    assert choose(dear, ["a"]) == "y"  # every point costs more than the cap: the cheapest
    assert MIN_NEEDED == 0.97


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(20, 100), st.integers(0, 50)), min_size=4, max_size=12),
       st.integers(20, 100), st.integers(0, 50))
def test_a_held_out_project_never_enters_its_own_choice(rows, other_cost, other_kept):
    """Changing anything about project p's replays leaves the point chosen without p unchanged."""
    def grid_of(override: tuple[int, int] | None) -> dict:
        grid: dict = {f"point{k}": {} for k in range(2)}
        for i, (project, cost, lost) in enumerate(rows):
            for k in range(2):
                c, gone = (override if override and project == 0 else (cost + 7 * k, max(0, lost - 10 * k)))
                grid[f"point{k}"][f"own{project}__repo__{i}.jsonl"] = _report(f"own{project}__repo__{i}.jsonl", c, 100,
                                                                             100 - min(gone, 100))
        return grid

    first, second = validate(grid_of(None)), validate(grid_of((other_cost, other_kept)))
    if "own0__repo" in first.held_out:
        assert first.held_out["own0__repo"] == second.held_out["own0__repo"]
    grid = grid_of(None)
    assert len(first.reports(grid, True)) == len(rows) == len(first.reports(grid, False))


def test_leave_one_out_scores_each_project_with_the_point_chosen_on_the_others():
    # project a prefers point x, b and c prefer y: leaving a out chooses y for a
    grid = {"x": {"a__r__1": _report("a__r__1", 40, 100, 100), "b__r__1": _report("b__r__1", 80, 100, 100),
                  "c__r__1": _report("c__r__1", 80, 100, 100)},
            "y": {"a__r__1": _report("a__r__1", 60, 100, 100), "b__r__1": _report("b__r__1", 50, 100, 100),
                  "c__r__1": _report("c__r__1", 50, 100, 100)}}
    v = validate(grid)
    assert v.in_sample == "y"
    assert v.held_out == {"a__r": "y", "b__r": "y", "c__r": "y"}
    assert [r.compressed.cost for r in v.reports(grid, True)] == [60, 50, 50]


def test_target_misses_name_each_session_and_overall_target_missed():
    good = [_report("s1.jsonl", 50, 100, 100, requests=200, cap_cost=80)]
    assert target_misses(good) == []
    near = [_report("near.jsonl", 50, 100, 96, requests=200, cap_cost=80)]  # cap 1.000, within 0.95
    slack = [_report("slack.jsonl", 50, 100, 89, requests=200, cap_cost=80, cap_kept=90)]  # cap - 0.01
    assert [m for m in target_misses(near) if "near.jsonl" in m] == []
    assert [m for m in target_misses(slack) if "slack.jsonl" in m] == []
    bad = [_report("lossy.jsonl", 50, 100, 60, cap_cost=80, cap_kept=90),
           _report("dear.jsonl", 90, 0, 0, requests=150, cap_cost=80),
           _report("above.jsonl", 120, 0, 0, cap_cost=80)]
    misses = "\n".join(target_misses(bad))
    assert "lossy.jsonl: needed 0.600 < cap 0.900" in misses
    assert "dear.jsonl: effective" in misses
    assert "above.jsonl: effective 1.200 > raw" in misses
    assert "overall needed" in misses and f"overall effective 0.867 > {MAX_EFFECTIVE}" in misses
    assert NEEDED_SLACK == 0.02
