"""The project's shape, read from the source (AST); lazy imports inside functions count too.

Must hold (the project guide; issue #12):
- no file in compress/, ccr/, memory/, ctxmill/, ground/, repomap/ or replay/ over 400 lines;
- no import cycle among the modules of those seven packages;
- dependencies point inward: compress/, memory/, ccr/, ground/ and repomap/ (the engine) never
  import ctxmill/ (the faces); ccr/ imports only ground/; ground/ imports nothing of the project;
  memory/ imports no stage (compress.stages), nor does another stage; nothing of the engine
  imports replay/ (the measuring harness), which imports no face; faces import it only inside
  a function (lazily: a hook's process never loads it);
- the installers (ctxmill/install/) are imported by the commands alone (a hook, the MCP server
  or the proxy never loads them), and import no serving face (proxy/, engine/, mcp_server,
  dashboard/) nor a command;
- compress/ is grouped by role: nothing in it outside runner/ imports the runner; the stage kit
  (compress/stagekit/) imports no stage, no runner and no session state; the session state
  (compress/state/) imports nothing else of compress/;
- no engine module reads the environment (`os.environ`, `os.getenv`): config is passed in.

An import of `a.b.c` is an edge to the module `a.b.c` only (a package whose `__init__` imports
its submodules is not a cycle); `from a.b import c` is an edge to `a.b.c` when that is a module,
else to `a.b`; relative imports are resolved; `importlib.import_module` with a literal name, or
an f-string whose literal head names a package, is an edge to the modules it can name.
`test_each_rule_can_fail` breaks each rule in a small made-up project, so a checker that stopped
seeing a breach fails too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ccr", "compress", "ctxmill", "ground", "memory", "repomap", "replay")
ENGINE = ("ccr", "compress", "ground", "memory", "repomap")
MAX_LINES = 400
ENV_READERS = frozenset({"environ", "environb", "getenv", "getenvb"})
FORBIDDEN = (  # (importer, imported, why); a package name covers its submodules
    ("ground", ("ccr", "compress", "ctxmill", "memory"), "ground/ imports nothing of the project"),
    ("ccr", ("compress", "ctxmill", "memory"), "ccr/ imports only ground/"),
    ("compress", ("ctxmill",), "the engine never imports ctxmill/"),
    ("memory", ("ctxmill",), "the engine never imports ctxmill/"),
    ("repomap", ("ctxmill", "memory", "ccr"),
     "the repository map reads files, the token estimate and the tokenizer only"),
    ("memory", ("compress.stages",), "memory/ imports no stage"),
    ("compress.stages", ("compress.stages",), "a stage imports no other stage"),
    ("replay", ("ctxmill",), "replay/ imports no face"),
    ("ctxmill.install", ("ctxmill.proxy", "ctxmill.engine", "ctxmill.mcp_server", "ctxmill.dashboard",
                         "ctxmill.commands"), "an installer writes client files and runs no face"),
    ("compress", ("compress.runner",), "nothing in compress/ outside runner/ imports the runner"),
    ("compress.stagekit", ("compress.stages", "compress.state"), "the stage kit imports no stage and no session state"),
    ("compress.state", ("compress",), "the session state imports nothing else of compress/"),
)
ONLY_FROM = (  # (imported, the only importers, why); package names cover their submodules
    ("ctxmill.install", ("ctxmill.install", "ctxmill.commands"),
     "the installers are used by the commands alone (a hook, the MCP server or the proxy never loads them)"),
)
OWN = ("compress.runner", "compress.state")
"""Packages whose modules import each other: a FORBIDDEN rule never covers an import from one of
their modules to another of the same package."""
ALLOWED = frozenset({("repomap", "memory.tokenize")})
"""(importer, imported) pairs a FORBIDDEN rule does not cover: the map tokenises prompts, paths
and names in any script as memory search does (one tokenizer)."""


@dataclass
class Module:
    path: Path
    imports: dict[str, int] = field(default_factory=dict)  # project module -> line of its first import
    env_reads: list[int] = field(default_factory=list)
    eager: set[str] = field(default_factory=set)  # project modules imported outside any function


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def in_engine(name: str) -> bool:
    return any(within(name, p) for p in ENGINE)


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def scan(root: Path) -> dict[str, Module]:
    paths = {module_name(root, p): p for package in PACKAGES if (root / package).is_dir()
             for p in sorted((root / package).rglob("*.py")) if "__pycache__" not in p.parts}
    return {name: read_module(name, path, set(paths)) for name, path in paths.items()}


def resolve(target: str, names: set[str]) -> str | None:
    """The deepest project module that `target` (a dotted name) names or lies in."""
    parts = target.split(".")
    return next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in names), None)


def _imported(node: ast.AST, name: str, is_package: bool, names: set[str]) -> list[str]:
    """Dotted names an import statement or an `import_module` call brings in."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = name.split(".") if is_package else name.split(".")[:-1]
            base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
        return [f"{base}.{alias.name}" for alias in node.names]
    if not isinstance(node, ast.Call) or not node.args:
        return []
    if (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in ("import_module", "__import__"):
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [arg.value]
        if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
            head = str(arg.values[0].value)
            return sorted(n for n in names if n.startswith(head) and n != head.rstrip("."))
    return []


def read_module(name: str, path: Path, names: set[str]) -> Module:
    module = Module(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    lazy = {id(inner) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for inner in ast.walk(node)}
    for node in ast.walk(tree):
        for target in _imported(node, name, path.name == "__init__.py", names):
            found = resolve(target, names)
            if found and found != name:
                module.imports.setdefault(found, node.lineno)
                if id(node) not in lazy:
                    module.eager.add(found)
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            module.env_reads += [node.lineno for alias in node.names if alias.name in ENV_READERS]
        elif isinstance(node, ast.Attribute) and node.attr in ENV_READERS:
            module.env_reads.append(node.lineno)
    return module


def import_breaches(modules: dict[str, Module], root: Path) -> list[str]:
    out = []
    for name, module in modules.items():
        for target, line in module.imports.items():
            why = [why for importer, imported, why in FORBIDDEN
                   if within(name, importer) and any(within(target, p) for p in imported)
                   and (importer, target) not in ALLOWED
                   and not any(within(name, own) and within(target, own) for own in OWN)]
            why += [why for imported, importers, why in ONLY_FROM
                    if within(target, imported) and not any(within(name, p) for p in importers)]
            if in_engine(name) and within(target, "replay"):
                why.append("the engine never imports replay/")
            if within(name, "ctxmill") and within(target, "replay") and target in module.eager:
                why.append("a face imports replay/ only inside a function")
            out += [f"{module.path.relative_to(root)}:{line} imports {target}: {w}" for w in why]
    return out


def environment_reads(modules: dict[str, Module], root: Path) -> list[str]:
    return [f"{m.path.relative_to(root)}:{line} reads the environment: config is passed in"
            for name, m in modules.items() if in_engine(name) for line in m.env_reads]


def long_files(root: Path) -> list[str]:
    out = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                lines = path.read_bytes().count(b"\n")  # what `wc -l` counts
                if lines > MAX_LINES:
                    out.append(f"{path.relative_to(root)} has {lines} lines (at most {MAX_LINES})")
    return out


def import_cycle(modules: dict[str, Module]) -> list[str]:
    """One import cycle (each module imports the next, the first repeated last), or []."""
    try:
        TopologicalSorter({name: set(m.imports) for name, m in modules.items()}).prepare()
    except CycleError as error:
        return list(reversed(error.args[1]))  # graphlib lists each module before one importing it
    return []


def breaches(root: Path) -> list[str]:
    modules = scan(root)
    cycle = import_cycle(modules)
    return (import_breaches(modules, root) + environment_reads(modules, root) + long_files(root)
            + (["import cycle: " + " -> ".join(cycle)] if cycle else []))


def layout(root: Path, package: str) -> tuple[int, int, int]:
    """(rooms, levels, arrows) of one package seen from its top: a room is one of its modules or
    folders (its `__init__` aside), an arrow a pair of rooms one of which imports the other (lazy
    imports count), the levels the longest chain of arrows, counted in rooms. Raises CycleError
    when rooms import each other in a circle (then there are no levels)."""
    modules = scan(root)
    room = {name: name.removeprefix(package + ".").split(".")[0] for name in modules
            if name.startswith(package + ".")}
    arrows = {(room[name], room[target]) for name, module in modules.items() if name in room
              for target in module.imports if target in room and room[target] != room[name]}
    above: dict[str, set[str]] = {r: set() for r in room.values()}  # room -> the rooms it imports
    for a, b in arrows:
        above[a].add(b)
    level: dict[str, int] = {}
    for r in TopologicalSorter(above).static_order():  # what a room imports comes first
        level[r] = 1 + max((level[b] for b in above[r]), default=0)
    return len(above), max(level.values(), default=0), len(arrows)


def test_the_project_keeps_its_shape():
    modules = scan(ROOT)
    assert {"compress.runner.pipeline", "compress.stages", "memory.extract", "ccr.store", "ground.files",
            "ctxmill.cli"} <= set(modules)  # the scan sees the project
    assert "compress.vocab.tools" in modules["memory.extract"].imports  # and its imports
    assert breaches(ROOT) == []


def test_every_stage_lives_in_stages_under_its_name_and_is_in_the_one_ordered_list():
    from compress.runner.pipeline import DEFAULT_STAGES

    files = {path.stem for path in (ROOT / "compress" / "stages").glob("*.py") if path.stem != "__init__"}
    assert sorted(stage.name for stage in DEFAULT_STAGES) == sorted(files)
    assert [stage.run.__module__ for stage in DEFAULT_STAGES] == [f"compress.stages.{s.name}" for s in DEFAULT_STAGES]


# -- each rule can fail ----------------------------------------------------------------------

_SMALL_PROJECT = {
    "ground/__init__.py": "",
    "ground/files.py": "import os\n",
    "ccr/__init__.py": "",
    "ccr/store.py": "from ground.files import os\n",
    "compress/__init__.py": "",
    "compress/model.py": "",
    "compress/runner/__init__.py": "",
    "compress/runner/pipeline.py": "from compress import model\nfrom compress.stages.dedup import Dedup\n"
                                   "from compress.runner.plan import plan\nfrom compress.state import session\n",
    "compress/runner/plan.py": "from compress.stagekit.stage import Stage\n",
    "compress/stagekit/__init__.py": "",
    "compress/stagekit/stage.py": "from compress.model import Block\n",
    "compress/state/__init__.py": "",
    "compress/state/session.py": "from compress.state.sealed import seal\nfrom ground import files\n",
    "compress/state/sealed.py": "",
    "compress/stages/__init__.py": "",
    "compress/stages/dedup.py": "from compress.model import Block\nfrom compress.stagekit import stage\n",
    "compress/stages/purge.py": "from compress.model import Block\n",
    "replay/__init__.py": "",
    "replay/harness.py": "import os\nfrom compress.runner.pipeline import run\nos.environ.get('X')\n",
    "memory/__init__.py": "",
    "memory/api.py": "from compress.model import Block\nfrom ccr.store import CCRStore\n",
    "ctxmill/__init__.py": "",
    "ctxmill/cli.py": "import importlib, os\n\ndef main(name):\n    os.environ.get('HOME')\n"
                      "    importlib.import_module(f'ctxmill.commands.{name}')\n",
    "ctxmill/commands/__init__.py": "",
    "ctxmill/commands/replay.py": "from memory import api\n\ndef run():\n    import replay.harness\n",
    "ctxmill/commands/install.py": "from ctxmill.install import claude_code\n",
    "ctxmill/install/__init__.py": "",
    "ctxmill/install/claude_code.py": "from ctxmill import hooks\n",
    "ctxmill/hooks.py": "",
    "ctxmill/proxy/__init__.py": "",
    "ctxmill/proxy/app.py": "",
}


@pytest.mark.parametrize("path, added, expected", [
    ("ground/files.py", "import ccr.store\n", "ground/files.py:2 imports ccr.store: ground/ imports nothing"),
    ("ccr/store.py", "def f():\n    from memory import api\n", "ccr/store.py:3 imports memory.api: ccr/ imports only"),
    ("ccr/store.py", "from compress.model import X\n", "imports compress.model: ccr/ imports only ground/"),
    ("compress/runner/pipeline.py", "def f():\n    import ctxmill.cli\n",
     "imports ctxmill.cli: the engine never imports"),
    ("memory/api.py", "from ctxmill import cli\n", "imports ctxmill.cli: the engine never imports ctxmill"),
    ("memory/api.py", "from compress.stages import dedup\n", "imports compress.stages.dedup: memory/ imports no stage"),
    ("memory/api.py", "import compress.stages\n", "imports compress.stages: memory/ imports no stage"),
    ("compress/stages/dedup.py", "from compress.stages.purge import cut\n", "a stage imports no other stage"),
    ("compress/stages/dedup.py", "from replay.harness import x\n", "never imports replay/"),
    ("memory/api.py", "import replay\n", "never imports replay/"),
    ("memory/api.py", "import importlib\nimportlib.import_module('replay.harness')\n", "never imports replay/"),
    ("replay/harness.py", "def f():\n    from ctxmill import cli\n", "replay/ imports no face"),
    ("ctxmill/commands/replay.py", "import replay.harness\n", "imports replay/ only inside a function"),
    ("memory/api.py", "import os\nos.environ.get('X')\n", "memory/api.py:4 reads the environment"),
    ("compress/model.py", "from os import getenv\n", "compress/model.py:1 reads the environment"),
    ("ground/files.py", "os.getenv('HOME')\n", "ground/files.py:2 reads the environment"),
    ("memory/api.py", "x = 1\n" * MAX_LINES, f"memory/api.py has {MAX_LINES + 2} lines"),
    ("ctxmill/commands/__init__.py", "\n" * (MAX_LINES + 1), "ctxmill/commands/__init__.py has 401 lines"),
    ("compress/model.py", "def f():\n    import compress.runner.pipeline\n", "import cycle"),
    ("compress/model.py", "from .runner import pipeline\n", "import cycle"),
    ("compress/stages/dedup.py", "from ..runner.pipeline import run\n", "import cycle"),
    ("compress/stages/dedup.py", "def f():\n    from compress.runner import plan\n",
     "compress/stages/dedup.py:4 imports compress.runner.plan: nothing in compress/ outside runner/"),
    ("compress/state/session.py", "import compress.runner\n", "imports compress.runner: nothing in compress/ outside"),
    ("compress/stagekit/stage.py", "from compress.stages.dedup import x\n", "the stage kit imports no stage"),
    ("compress/stagekit/stage.py", "from compress.state.session import S\n", "the stage kit imports no stage and no"),
    ("compress/state/session.py", "from compress.model import Block\n", "the session state imports nothing else"),
    ("compress/state/sealed.py", "from ..stagekit import stage\n", "the session state imports nothing else"),
    ("ctxmill/commands/replay.py", "from ctxmill.cli import main\n", "import cycle"),  # through import_module
    ("ctxmill/hooks.py", "def f():\n    from ctxmill.install import claude_code\n",
     "ctxmill/hooks.py:2 imports ctxmill.install.claude_code: the installers are used by the commands alone"),
    ("ctxmill/proxy/app.py", "import ctxmill.install\n", "imports ctxmill.install: the installers are used by"),
    ("ctxmill/install/claude_code.py", "from ctxmill.proxy import app\n",
     "imports ctxmill.proxy.app: an installer writes client files and runs no face"),
    ("ctxmill/install/claude_code.py", "def f():\n    from ctxmill.commands import install\n",
     "an installer writes client files and runs no face"),
])
def test_each_rule_can_fail(tmp_path, path, added, expected):
    _write_small_project(tmp_path)
    assert breaches(tmp_path) == []
    with (tmp_path / path).open("a") as f:
        f.write(added)
    found = breaches(tmp_path)
    assert any(expected in breach for breach in found), found


def _write_small_project(root: Path) -> None:
    for name, text in _SMALL_PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_layout_counts_rooms_levels_and_arrows(tmp_path):
    _write_small_project(tmp_path)
    # model, runner, stagekit, state, stages; runner -> stages -> stagekit -> model is the longest
    # chain; runner -> (model, stages, stagekit, state), stages -> (model, stagekit), stagekit -> model
    assert layout(tmp_path, "compress") == (5, 4, 7)
    (tmp_path / "compress/state/sealed.py").write_text("def f():\n    from compress import model\n")
    assert layout(tmp_path, "compress") == (5, 4, 8)  # a lazy import is an arrow too


if __name__ == "__main__":  # python tests/test_layering.py compress ctxmill: each package's counts
    import sys

    for package in sys.argv[1:] or ["compress"]:
        try:
            rooms, levels, arrows = layout(ROOT, package)
        except CycleError as error:
            print(f"{package}/: rooms import each other in a circle: {' -> '.join(error.args[1])}")
        else:
            print(f"{package}/: {rooms} modules or folders, {levels} levels, {arrows} import arrows")
