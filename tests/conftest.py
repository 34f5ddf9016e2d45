"""What every test gets: a private home, a guard against writes outside its temporary folders,
one skip reason for the tests that need the shared corpus, and the groups that run apart.

Must hold:
- every test and every process it starts sees HOME, XDG_DATA_HOME, XDG_CONFIG_HOME,
  XDG_CACHE_HOME and XDG_STATE_HOME in temporary folders (`private_homes`), never the
  developer's; the real clients of tests/e2e stay cached where they were installed
  (CTXMILL_E2E_PREFIX, ~/.cache/ctxmill-e2e/npm by default);
- a test during which anything is written to the real user's ctxmill data folder or to the
  checkout's `.ctxmill/` fails, naming the files (`writes_stay_in_tmp`); the run as a whole fails
  when it leaves a new file in the checkout (`pytest_sessionfinish`);
- a test marked `corpus`, or using the `corpus` fixture, skips with `CORPUS_ABSENT` when the
  corpus is absent, and only there (no test has a skip reason of its own for it);
- with pytest-xdist (the default, `-n auto` in pyproject.toml), the tests of one `xdist_group`
  run one after another in one worker: `tests/e2e` (real clients, CPU-heavy, one results file).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

from tests.redis_fixture import TEST_KEY, redis_server  # noqa: F401 - a real redis-server, shared by the run

# CI runs are derandomized so a submission's result does not depend on the seed; developers get
# fresh random examples on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("CTXMILL_CORPUS", REPO.parent / "shared" / "corpus"))
CORPUS_ABSENT = (f"needs the shared corpus ({CORPUS}/transcripts; CTXMILL_CORPUS names another, "
                 "docs/development.md says how to make one of your own sessions)")

REAL_HOME = Path.home()
"""The developer's home, read before any test points HOME elsewhere."""
GUARDED = (
    Path(os.environ.get("XDG_DATA_HOME") or REAL_HOME / ".local" / "share") / "ctxmill",
    REPO / ".ctxmill",
)
"""Where no test may write: the real user's ctxmill data (global memory, CCR store, ledger) and
the checkout's own project home."""
HOMES = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")
E2E_PREFIX = "CTXMILL_E2E_PREFIX"  # tests.e2e.clients.prefix() (not imported: conftest stays light)
AUTOSTART = "CTXMILL_PROXY_AUTOSTART"  # ctxmill.always_on.AUTOSTART_ENV (not imported: conftest stays light)
STORE_KEY = "CTXMILL_STORE_KEY"  # ctxmill.shared_store.KEY_ENV
GROUPS = {"e2e": REPO / "tests" / "e2e"}
"""xdist group -> the folder whose tests run one after another in one worker."""


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "corpus" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.corpus)
        for group, folder in GROUPS.items():
            if folder in Path(item.path).parents:
                item.add_marker(pytest.mark.xdist_group(group))


def pytest_runtest_setup(item):
    if item.get_closest_marker("corpus") and not (CORPUS / "transcripts").is_dir():
        pytest.skip(CORPUS_ABSENT)


def _footprint(roots) -> dict[str, tuple[int, int]]:
    """Every file below `roots`: (mtime in ns, size)."""
    out = {}
    for root in roots:
        for folder, _, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                out[path] = (st.st_mtime_ns, st.st_size)
    return out


_seen: dict[tuple[Path, ...], dict[str, tuple[int, int]]] = {GUARDED: _footprint(GUARDED)}


def new_writes(roots: tuple[Path, ...] = GUARDED) -> list[str]:
    """The files below `roots` written, created or removed since the last call (the first call
    for `roots` takes stock and names none)."""
    now = _footprint(roots)
    before, _seen[roots] = _seen.get(roots, now), now
    return sorted(path for path in now.keys() | before.keys() if now.get(path) != before.get(path))


@pytest.fixture(autouse=True)
def writes_stay_in_tmp():
    """Fail the test during which a file below `GUARDED` was written, created or removed (with
    xdist, possibly by a test running beside it in another worker: both name the files)."""
    yield
    changed = new_writes()
    if changed:
        pytest.fail("written outside the test's temporary folders: " + ", ".join(changed[:5])
                    + (f" and {len(changed) - 5} more" if len(changed) > 5 else ""), pytrace=False)


def _untracked() -> set[str] | None:
    """The checkout's files git does not track (ignored ones too), but the tools' own caches; a
    tracked file edited meanwhile (someone working in the checkout) is not one of them."""
    try:
        done = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--ignored", "-uall"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    skip = ("__pycache__/", ".venv/", ".hypothesis/", ".egg-info/", ".benchmarks/", ".ruff_cache/", ".mypy_cache/")
    lines = {line[3:] for line in done.stdout.splitlines() if line[:2] in ("??", "!!")} if done.returncode == 0 else set()
    return {path for path in lines if not any(part in path for part in skip)}


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the run's controller (or a run without xdist)
        session.config.stash[_UNTRACKED] = _untracked()


def pytest_sessionfinish(session, exitstatus):
    before = session.config.stash.get(_UNTRACKED, None)
    if before is None or hasattr(session.config, "workerinput"):
        return
    left = sorted((_untracked() or set()) - before)
    if left:
        session.config.get_terminal_writer().line(
            "the tests left files in the checkout (a test must write only below its tmp_path): " + ", ".join(left[:10]),
            red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_UNTRACKED = pytest.StashKey[set]()


@pytest.fixture(scope="session", autouse=True)
def private_homes(tmp_path_factory):
    """The homes (`HOMES`) of every test and every process it starts are temporary folders, never
    the developer's (~/.local/share/ctxmill: the CCR store, global memory and ledger; ~/.claude,
    ~/.codex, ~/.config/opencode: what `ctxmill install` edits); git commits get a test identity
    (no ~/.gitconfig there); and no hook or MCP server a test starts launches the always-on proxy
    (a test that installs a client would otherwise leave one on the default port for every later
    test): the tests of always-on compression turn it back on for themselves; every shared store
    they name is signed with the tests' store key."""
    root = tmp_path_factory.mktemp("homes")
    homes = {name: root / name.lower() for name in HOMES} | {"HOME": root / "home"}
    for folder in homes.values():
        folder.mkdir()
    values = {name: str(folder) for name, folder in homes.items()}
    values.update({AUTOSTART: "0", STORE_KEY: TEST_KEY.decode(),
                   E2E_PREFIX: os.environ.get(E2E_PREFIX) or str(REAL_HOME / ".cache" / "ctxmill-e2e" / "npm")})
    for who in ("AUTHOR", "COMMITTER"):
        values |= {f"GIT_{who}_NAME": "ctxmill tests", f"GIT_{who}_EMAIL": "tests@ctxmill.invalid"}
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared corpus (the test is marked `corpus`: it skips with CORPUS_ABSENT without it)."""
    return CORPUS
