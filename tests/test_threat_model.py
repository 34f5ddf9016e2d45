"""docs/security.md's threat model is held to the code: each row names one of the five
adversaries, a boundary, the module that enforces it and the tests that attack it; every module
and test it names exists (a `file::test` names a test function in that file); and every attack
test in tests/trust/ is named in a row, so a boundary with tests but no row (a feature that did
not say what it crosses) fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "security.md"
ADVERSARIES = {
    "another local user",
    "a cloned repository",
    "hostile tool output",
    "a web page",
    "a co-tenant of a shared Redis",
}


def rows(text: str) -> list[list[str]]:
    """The threat model table's rows (under its header), as cells."""
    lines = text.split("| adversary | boundary | enforcing module | test |", 1)[1].splitlines()[2:]
    out = []
    for line in lines:
        if not line.startswith("|"):
            break
        out.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return out


def named(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def problems(text: str, root: Path) -> list[str]:
    found = []
    table = rows(text)
    if not table:
        return ["no threat model table"]
    for adversary, boundary, module, tests in table:
        where = f"{adversary} / {boundary[:40]}"
        if adversary not in ADVERSARIES:
            found.append(f"{where}: unknown adversary")
        if not boundary:
            found.append(f"{where}: no boundary")
        for cell, what in ((module, "module"), (tests, "test")):
            if not named(cell):
                found.append(f"{where}: no {what} named")
            for name in named(cell):
                path, _, function = name.partition("::")
                if not (root / path).is_file():
                    found.append(f"{where}: {what} {path} does not exist")
                elif function and f"def {function}(" not in (root / path).read_text():
                    found.append(f"{where}: {path} has no {function}")
    cited = {n.partition("::")[0] for row in table for n in named(row[3])}
    for test in sorted((root / "tests" / "trust").glob("test_*.py")):
        if str(test.relative_to(root)) not in cited:
            found.append(f"{test.relative_to(root)} attacks a boundary no row names")
    return found


def test_the_threat_model_names_only_what_exists():
    assert problems(PAGE.read_text(), ROOT) == []


@pytest.mark.parametrize(
    "broken, complaint",
    [
        (
            "`ctxmill/provenance.py` | `tests/trust/test_trust_config_provenance.py`",
            "`ctxmill/gone.py` | `tests/trust/test_trust_config_provenance.py`",
        ),
        (
            "`ctxmill/provenance.py` | `tests/trust/test_trust_config_provenance.py`",
            "`ctxmill/provenance.py` | "
            "`tests/trust/test_trust_config_provenance.py::test_nothing_like_it`",
        ),
        ("| a web page | nothing a page", "| a neighbour's cat | nothing a page"),
        (
            "`ground/home_files.py` | `tests/trust/test_trust_bounded_reads.py`, "
            "`tests/trust/test_trust_read_inside.py`",
            "`ground/home_files.py` | `tests/trust/test_trust_read_inside.py`",
        ),
        (
            "`ground/signing.py` | `tests/test_gateway_integrity.py` |",
            "`ground/signing.py` | |",
        ),
        (  # a boundary still being built names no module: it is not drawn yet
            "`repomap/files.py` | `tests/test_repomap.py` |",
            "TBD | `tests/test_repomap.py` |",
        ),
    ],
)
def test_each_rule_can_fail(broken, complaint):
    text = PAGE.read_text()
    assert broken in text
    assert problems(text.replace(broken, complaint, 1), ROOT) != []
