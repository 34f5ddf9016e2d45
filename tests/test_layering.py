"""Dependencies point inward: `ground/` imports nothing of the project, `ccr/` only `ground/`.

Every import counts, lazy ones inside functions included."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = {"ccr", "compress", "ctxmill", "ground", "memory"}


def project_imports(package: str) -> set[str]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found.update(top for top in (n.split(".")[0] for n in names) if top in PROJECT)
    return found


@pytest.mark.parametrize("package, allowed", [("ground", set()), ("ccr", {"ground"})])
def test_package_imports_only_inward(package, allowed):
    assert project_imports(package) - {package} <= allowed


def test_ground_reads_no_environment():
    for path in (ROOT / "ground").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = node.attr if isinstance(node, ast.Attribute) else node.name if isinstance(node, ast.alias) else None
            assert name not in ("environ", "environb", "getenv"), path
