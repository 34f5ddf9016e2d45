"""Pathological tool outputs through the whole pipeline, each in a subprocess with a timeout,
at about 1/100 of the sizes bench/pathological.py measures (figures in docs/reliability.md)."""

from __future__ import annotations

import pytest

from bench.pathological import CASES, measure

SMALL = {"200K-char single line": 200_000, "JSON text nested 100,000 deep": 100_000,
         "tool input nested 100,000 deep": 100_000}
"""Cases whose full size is already cheap run at full size."""


@pytest.mark.parametrize("case", list(CASES))
def test_pathological_input_finishes_and_never_grows(case):
    size = SMALL.get(case, CASES[case][1] // 100)
    result = measure(case, size, timeout=60)
    assert "crashed" not in result, result
    assert result["tokens_after"] <= result["tokens_before"]
    if result["error"]:  # failing open is allowed only for input too deep to walk
        assert result["passed_through"] and "nested too deeply" in result["error"], result
