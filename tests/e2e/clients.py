"""The real agent clients, installed from the npm registry into a cache prefix, and run offline.

`ensure(name)` installs Claude Code, Codex and OpenCode (all three at once, pinned versions) into
`$CTXMILL_E2E_PREFIX` (default `~/.cache/ctxmill-e2e/npm`) the first time, under a file lock so
parallel test processes install once; later calls reuse the prefix. It returns a `Client` (binary
path and the version the binary reports) or raises `Unavailable` with the reason (no node or npm,
the registry cannot be reached, the binary does not run here), which the tests turn into a skip.

`run(cmd, …)` runs a client in its own process group with a hard timeout (the whole group is
killed when it runs out) and returns a `Result`. `base_env(home)` is the environment every
client gets: a temp HOME, no provider or client variables inherited from the caller (a developer
running the tests inside Claude Code must not leak its session into them), no telemetry and no
update checks.

Versions are pinned so a run means the same thing tomorrow; bump `PINNED` (and re-run the smoke
tests) to move on. `CTXMILL_E2E_<CLIENT>_VERSION` overrides one (e.g. `CTXMILL_E2E_CODEX_VERSION=latest`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

PINNED = {
    "claude-code": ("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": ("@openai/codex", "0.171.0", "codex"),
    "opencode": ("opencode-ai", "1.18.33", "opencode"),
}
INSTALL_TIMEOUT = 900  # three packages, ~800 MB unpacked; about a minute on a fast link
VERSION_TIMEOUT = 60

# Variables a caller may have set that would point a client elsewhere or change its behaviour.
_SCRUB_PREFIXES = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "OPENCODE", "AZURE_OPENAI", "AWS_BEARER",
                   "GEMINI_", "GOOGLE_API", "XDG_", "NODE_OPTIONS", "BUN_")
_SCRUB = {"AGENT", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
          "NO_PROXY", "no_proxy", "CTXMILL_HOME", "MCP_TIMEOUT"}


class Unavailable(Exception):
    """The client cannot be run here; the message says why (used as the skip reason)."""


@dataclass(frozen=True)
class Client:
    name: str
    package: str
    bin: Path
    version: str  # what `--version` printed (first line)


@dataclass
class Result:
    cmd: list[str]
    returncode: int | None  # None: killed on timeout
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def describe(self) -> str:
        status = "timed out" if self.timed_out else f"exit {self.returncode}"
        return (f"{' '.join(self.cmd[:3])}… {status} after {self.seconds:.1f}s\n"
                f"--- stdout (tail)\n{self.stdout[-3000:]}\n--- stderr (tail)\n{self.stderr[-3000:]}")


def prefix() -> Path:
    return Path(os.environ.get("CTXMILL_E2E_PREFIX") or Path.home() / ".cache" / "ctxmill-e2e" / "npm")


def _spec(name: str) -> tuple[str, str, str]:
    package, version, binary = PINNED[name]
    version = os.environ.get(f"CTXMILL_E2E_{name.upper().replace('-', '_')}_VERSION", version)
    return package, version, binary


def _installed_version(root: Path, package: str) -> str | None:
    import json

    try:
        return json.loads((root / "node_modules" / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _needs_install(root: Path) -> list[str]:
    out = []
    for name in PINNED:
        package, version, binary = _spec(name)
        have = _installed_version(root, package)
        if have is None or (version != "latest" and have != version) or not (root / "node_modules" / ".bin" / binary).exists():
            out.append(f"{package}@{version}")
    return out


def install() -> Path:
    """Install every pinned client into the prefix unless already there; return the prefix."""
    if not shutil.which("node") or not shutil.which("npm"):
        raise Unavailable("node and npm are needed to install the real clients (apt-get install nodejs npm)")
    root = prefix()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = _needs_install(root)
        if not missing:
            return root
        cmd = ["npm", "install", "--prefix", str(root), "--no-audit", "--no-fund", "--no-update-notifier",
               "--loglevel=error", *missing]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"npm install did not finish in {INSTALL_TIMEOUT}s (registry unreachable?)") from None
        if proc.returncode != 0:
            raise Unavailable("npm install of the real clients failed (registry unreachable?): "
                              + _npm_error(proc.stderr or proc.stdout))
        still = _needs_install(root)
        if still:
            raise Unavailable(f"npm install left these missing: {', '.join(still)}")
        return root


def _npm_error(text: str) -> str:
    """The telling lines of npm's error output: its code and the first message, not the stack."""
    lines = [ln.removeprefix("npm error").strip() for ln in text.splitlines() if ln.startswith("npm error")]
    lines = [ln for ln in lines if ln and not ln.startswith(("at ", "syscall", "errno", "A complete log", "}"))]
    return " | ".join(lines[:2]) or text.strip()[-300:]


_cache: dict[str, Client] = {}


def ensure(name: str) -> Client:
    """The installed client `name` ("claude-code", "codex", "opencode"), checked to run here."""
    if name in _cache:
        return _cache[name]
    root = install()
    package, _, binary = _spec(name)
    path = root / "node_modules" / ".bin" / binary
    home = root / ".version-home"
    home.mkdir(exist_ok=True)
    res = run([str(path), "--version"], env=base_env(home), cwd=home, timeout=VERSION_TIMEOUT)
    if res.returncode != 0:
        raise Unavailable(f"{binary} --version does not run here: {res.describe()}")
    version = (res.stdout.strip() or res.stderr.strip()).splitlines()[0]
    client = Client(name, package, path, version)
    _cache[name] = client
    return client


def rg_dir() -> Path | None:
    """A folder holding an `rg` binary for OpenCode's grep tool (it would download ripgrep otherwise).

    The system's rg when there is one, else the ripgrep that ships inside the Codex npm package.
    """
    if shutil.which("rg"):
        return Path(shutil.which("rg")).parent
    for rg in sorted(prefix().glob("node_modules/@openai/codex-linux-*/vendor/*/codex-path/rg")):
        return rg.parent
    return None


def base_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in _SCRUB and not any(k.startswith(p) for p in _SCRUB_PREFIXES)}
    env.update(HOME=str(home), NO_COLOR="1", TERM="dumb",
               DO_NOT_TRACK="1", DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1")
    env.update(extra)
    return env


def run(cmd: list[str], *, env: dict[str, str], cwd: Path, timeout: float, stdin: str | None = None) -> Result:
    """Run `cmd` in a new session; on timeout kill its whole process group.

    PWD is set to `cwd`: OpenCode takes its project directory from $PWD when it is set, so an
    inherited PWD makes it read another folder's config (and fall back to its default model).
    """
    start = time.monotonic()
    env = {**env, "PWD": str(cwd)}
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            text=True, errors="replace", start_new_session=True)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        code = None
    finally:
        _kill_group(proc)  # leftovers (MCP servers, shells) of a client that exited
    return Result(cmd, code, out or "", err or "", time.monotonic() - start)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
