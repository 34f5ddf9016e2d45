"""The adversarial suite's counts, for docs/reliability.md: `python bench/adversarial.py [pytest args]`.

Runs tests/reliability/ (kills, concurrent writers, full disks, hostile input to the CLI, the
proxy, the hooks and the MCP server, slow clients, secret canaries at rest) and the canary
detection test with CTXMILL_TALLY set, so each adversarial test records what it tried, lost and
leaked (tests/reliability/tally.py), and prints one table row per kind of attempt, a total per
face (– where no test of the row measures that count), the commit, the date and the run's wall
time. The tests assert lost == leaked == 0 themselves; this only counts. The "redaction
time" face is a bench, not a test (`redaction_time`): it prints its own row with a column for
inputs slowed past the budget.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ["tests/reliability", "tests/test_redact_canaries.py"]


def _add(a: int | None, b: int | None) -> int | None:
    """Sum of counts, None (not measured) only when neither was measured."""
    return a if b is None else b if a is None else a + b


def _shown(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


def main() -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        tally = Path(tmp) / "tally.jsonl"
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *SUITE, *sys.argv[1:]],
                              cwd=ROOT, env={**os.environ, "CTXMILL_TALLY": str(tally)})
        rows = [json.loads(line) for line in tally.read_text().splitlines()] if tally.exists() else []
    merged: dict[tuple[str, str], list] = defaultdict(lambda: [0, None, None])
    for row in rows:
        counts = merged[row["face"], row["what"]]
        for i, name in enumerate(("tried", "lost", "leaked")):
            counts[i] = _add(counts[i], row[name])
    print("\n| face | what | tried | lost | leaked |\n|---|---|---:|---:|---:|")
    totals: dict[str, list] = defaultdict(lambda: [0, None, None])
    for (face, what), counts in sorted(merged.items()):
        print(f"| {face} | {what} | " + " | ".join(map(_shown, counts)) + " |")
        totals[face] = [_add(a, b) for a, b in zip(totals[face], counts)]
    for face, counts in sorted(totals.items()):
        print(f"| **{face}** | **all** | " + " | ".join(f"**{_shown(n)}**" for n in counts) + " |")
    slow = redaction_time()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    print(f"\ncommit {commit.stdout.strip() or '?'}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
          f"{time.monotonic() - started:.0f} s, pytest exit {done.returncode}")
    return done.returncode or slow


def redaction_time() -> int:
    """The "redaction time" face (bench/redact_speed.py in process): every adversarial shape at
    1 MB, a canary planted in each. tried = shapes; lost = shapes whose output differs between
    two runs; leaked = planted canaries left in the output; slowed = shapes over 1 s per MB."""
    sys.path.insert(0, str(ROOT))
    from bench.redact_speed import BUDGET, over_budget, run

    rows = run(with_grid=True)
    slowed = [r for r in rows if over_budget(r)]
    worst = max(rows, key=lambda r: r["s_per_mb"])
    print(f"\n| face | what | tried | lost | leaked | slowed past budget ({BUDGET:.0f} s per MB) |\n"
          "|---|---|---:|---:|---:|---:|")
    print(f"| redaction time | 1 MB adversarial and realistic inputs (slowest {worst['s_per_mb']:.2f} s/MB: "
          f"{worst['shape']}) | {len(rows)} | {sum(r['lost'] for r in rows)} | {sum(r['leaked'] for r in rows)} "
          f"| {len(slowed)} |")
    return 1 if slowed or any(r["lost"] or r["leaked"] for r in rows) else 0



# ------------------------------------------------------------------------------------------------
# Local trust: another local user, a cloned repository, web pages, install backups, the local
# channel (bench/adversarial_channel.py: the always-on port squatted, DNS-rebound Host names).
# `python bench/adversarial.py --local-trust` runs these faces alone; a full run adds their table
# after the suite's. Each face returns rows (face, what, tried, lost, leaked, slowed past budget);
# another user is uid 65534 (root only: its rows are skipped otherwise). Harness: tests/trust/kit.py.

TRUST_HEADER = "| face | what | tried | lost | leaked | slowed past budget |\n|---|---|---:|---:|---:|---:|"


def engine_socket_face(tmp: Path) -> list[tuple]:
    """Runtime folders someone else prepared, then an impostor engine the plugin is pointed at."""
    import shutil
    import subprocess as sp

    from tests.trust.kit import OTHER_UID, PLUGIN_BUDGET_MS, can_be_another_user, ctxmill, plugin_turn

    rows, other = [], can_be_another_user()
    shapes = ["ours, 0777", "ours, lock linked to a victim file"] + (
        ["another uid's, 0777", "another uid's, 0700", "a link to another uid's folder"] if other else [])
    lost = leaked = slowed = 0
    for i, shape in enumerate(shapes):
        base = tmp / f"engine{i}"
        folder, victim = base / "ctxmill-0", base / "victim"
        base.mkdir()
        victim.write_text("the victim's file\n")
        if shape.startswith("a link"):
            (base / "theirs").mkdir()
            os.chown(base / "theirs", OTHER_UID, OTHER_UID)
            folder.symlink_to(base / "theirs")
        else:
            folder.mkdir()
            os.chmod(folder, 0o777 if "0777" in shape else 0o700)
            if shape.startswith("another"):
                os.chown(folder, OTHER_UID, OTHER_UID)
        if "lock" in shape:
            (folder / "engine.sock.lock").symlink_to(victim)
        done, seconds = ctxmill(["engine", "--socket", str(folder / "engine.sock"), "--idle-minutes", "0.01"],
                                base, base / "user")
        served = done.returncode == 0
        lost += victim.read_text() != "the victim's file\n"
        leaked += served and (not shape.startswith("ours") or stat_mode(folder) != 0o700)
        slowed += seconds > 30
    rows.append(("engine socket", "runtime folders prepared by someone else, then `ctxmill engine`", len(shapes),
                 lost, leaked, slowed))
    if shutil.which("node") is None:
        return rows
    shapes = ["a folder others can write"] + (["another uid's folder", "another uid's socket"] if other else [])
    leaked = slowed = 0
    for i, shape in enumerate(shapes):
        folder = tmp / f"plugin{i}"
        folder.mkdir()
        os.chmod(folder, 0o777 if shape.startswith("a folder") else 0o755)
        if shape == "another uid's folder":
            os.chown(folder, OTHER_UID, OTHER_UID)
        try:
            text, requests, ms = plugin_turn(folder / "engine.sock", tmp / "plugin.log",
                                             OTHER_UID if shape.endswith("socket") else None)
        except (RuntimeError, sp.SubprocessError):
            text, requests, ms = "", [], 0.0
        leaked += bool(requests) or text != "hello"
        slowed += ms > PLUGIN_BUDGET_MS + 500
    rows.append(("engine socket", "the OpenCode plugin beside an impostor engine", len(shapes), 0, leaked, slowed))
    return rows


def stat_mode(path: Path) -> int:
    return os.lstat(path).st_mode & 0o777


LINKS = {  # what a cloned repository ships inside .ctxmill/, pointing out of it
    "ctxmill.log -> the shell profile": ("ctxmill.log", "victim"),
    "checkpoint.md -> a file": ("checkpoint.md", "victim"),
    "MEMORY.md -> a file": ("MEMORY.md", "victim"),
    "sessions -> a folder": ("sessions", "outside"),
    "sessions/<id>/checkpoint.raw.json -> a file": ("sessions/s1/checkpoint.raw.json", "victim"),
    "ccr -> a folder": ("ccr", "outside"),
    "ccr/ccr.sqlite3-wal -> a file": ("ccr/ccr.sqlite3-wal", "victim"),
    ".index -> a folder": (".index", "outside"),
    ".ctxmill -> a folder": ("", "outside"),
}


def cloned_repo_face(tmp: Path) -> list[tuple]:
    """Each link above, then the hooks Claude Code runs in the repository."""
    import json as _json

    from ctxmill.commands.hook import BUDGETS
    from tests.trust.kit import hook

    tried = lost = leaked = slowed = 0
    for i, (name, target) in enumerate(LINKS.values()):
        user = tmp / f"repo{i}" / "user"
        repo = user / "src" / "cloned"
        (repo / ".git").mkdir(parents=True)
        victim, outside = user / ".bashrc", user / "outside"
        victim.write_text("# profile\n")
        outside.mkdir()
        home = repo / ".ctxmill"
        link = home / name if name else home
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(victim if target == "victim" else outside)
        if name:
            (home / "config.toml").write_text('[memory]\n"$(touch /tmp/PWNED)" = 1\n')
        transcript = user / "t.jsonl"
        transcript.write_text(_json.dumps({"type": "user", "message": {"role": "user", "content": "fix it"}}) + "\n")
        event = {"session_id": "s1", "cwd": str(repo), "prompt": "fix the build", "transcript_path": str(transcript)}
        for name_ in ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop"):
            _, seconds = hook(name_, repo, user, event)
            tried += 1
            slowed += seconds > BUDGETS[name_] + 2
        lost += victim.read_text() != "# profile\n"
        leaked += any(outside.iterdir())
    rows = [("cloned repository", "links out of .ctxmill/ (9 shapes) through 4 hooks", tried, lost, leaked, slowed)]
    return rows + [_retention_row(tmp / "retention")]


def _retention_row(tmp: Path) -> tuple:
    """A cloned project's [ccr] ttl_hours = 0.0001 and max_mb = 0.001, then another project's keys."""
    import time as _time

    from ccr.store import CCRStore
    from ctxmill.settings import Settings

    for project in ("cloned", "mine"):
        (tmp / project / ".ctxmill").mkdir(parents=True)
    (tmp / "cloned/.ctxmill/config.toml").write_text("[ccr]\nttl_hours = 0.0001\nmax_mb = 0.001\n")
    with Settings.load(tmp / "mine/.ctxmill").open_ccr() as store:
        keys = [store.put(f"original {i} " * 50) for i in range(12)]
    theirs = Settings.load(tmp / "cloned/.ctxmill")
    with CCRStore(theirs.ccr_dir, retention=theirs.ccr, clock=lambda: _time.time() + 3600) as store:
        store.put("their text " * 1000)
    with Settings.load(tmp / "mine/.ctxmill").open_ccr() as store:
        lost = sum(not store.get(k).ok for k in keys)
    return ("cloned repository", "a project's [ccr] retention against another project's keys", len(keys), lost,
            None, None)


PAGE_SHAPES = [
    {"origin": "https://evil.example", "content-type": "text/plain;charset=UTF-8"},
    {"origin": "null", "content-type": "application/x-www-form-urlencoded"},
    {"origin": "https://evil.example", "content-type": "multipart/form-data; boundary=x"},
    {"origin": "http://127.0.0.1:8787", "sec-fetch-site": "same-origin", "content-type": "application/json"},
    {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "content-type": "text/plain"},
    {"content-type": "text/plain"},
]
API_ROUTES = ["/v1/messages", "/v1/messages/count_tokens", "/v1/chat/completions", "/v1/responses"]


def browser_origin_face(tmp: Path) -> list[tuple]:
    """What a web page can send to the proxy on loopback, 205 of it, then agents' requests."""
    import time as _time

    import httpx
    import orjson

    from compress.state.session import prune_sessions
    from ctxmill.proxy import create_app
    from ctxmill.proxy.server import uvicorn_options
    from ctxmill.proxy_config import ProxyConfig
    from memory.summary import CHECKPOINT_FILE
    from tests.fake_upstream import FakeUpstream, ServerThread
    from tests.proxy_helpers import example
    from tests.trust.kit import OTHER_UID, attach_to_a_server_run_by, can_be_another_user

    def body(i: int) -> bytes:
        b = example()
        b["messages"][0]["content"] = f"conversation {i}"
        return orjson.dumps(b)

    fake = FakeUpstream()
    home = tmp / "proxy-home"
    real = home / "sessions" / "real-session"
    real.mkdir(parents=True)
    (real / CHECKPOINT_FILE).write_text("# the person's checkpoint\n")
    rows = []
    with ServerThread(fake.app()) as upstream:
        fake.url = upstream.url
        config = ProxyConfig(upstream_anthropic=upstream.url, upstream_openai=upstream.url, home=home)
        with ServerThread(create_app(config), **uvicorn_options(config)) as proxy:
            tried = leaked = slowed = 0
            for i in range(205):
                headers = PAGE_SHAPES[i % len(PAGE_SHAPES)]
                started = _time.monotonic()
                r = httpx.post(proxy.url + API_ROUTES[i % len(API_ROUTES)], headers=headers, content=body(i),
                               timeout=30)
                tried += 1
                leaked += r.status_code not in (403, 415)
                slowed += _time.monotonic() - started > 1.0
            leaked += len(fake.received)
            folders = len(list((home / "sessions").iterdir())) - 1
            rows.append(("proxy", "205 requests a web page can send (6 header shapes, 4 API routes)", tried, 0,
                         leaked + folders, slowed))
            lost = 0
            for i in range(205):  # anonymous but API-shaped: what another local process can send
                r = httpx.post(proxy.url + "/v1/messages", headers={"content-type": "application/json"},
                               content=body(1000 + i), timeout=30)
                lost += r.status_code != 200
    _time.sleep(0.5)
    folders = len(list((home / "sessions").iterdir())) - 1
    prune_sessions(home / "sessions", keep=(CHECKPOINT_FILE,))
    lost += not (real / CHECKPOINT_FILE).exists()
    rows.append(("proxy", f"205 anonymous conversations ({folders} folders, cap {config.new_sessions_per_hour}/h), "
                 "then pruning", 205, lost, max(0, folders - config.new_sessions_per_hour), None))
    if can_be_another_user():
        done = attach_to_a_server_run_by(OTHER_UID, tmp)
        rows.append(("proxy", "`run --attach` to another user's server on the port", 1, 0, int(done.returncode == 0),
                     None))
    return rows


def install_backup_face(tmp: Path) -> list[tuple]:
    """`ctxmill install` over files holding API keys, for each mode and umask."""
    import json as _json

    from tests.trust.kit import ctxmill

    tried = leaked = slowed = 0
    for mode in (0o600, 0o640, 0o400):
        for umask in (0o022, 0o000):
            for host in ("claude-code", "opencode"):
                user = tmp / f"install-{mode:o}-{umask:o}-{host}"
                (user / "proj" / ".git").mkdir(parents=True)
                names = ([".claude.json", ".claude/settings.json"] if host == "claude-code"
                         else [".config/opencode/opencode.json"])
                for name in names:
                    (user / name).parent.mkdir(parents=True, exist_ok=True)
                    (user / name).write_text(_json.dumps({"primaryApiKey": "sk-ant-api03-" + "k" * 40}))
                    os.chmod(user / name, mode)
                _, seconds = ctxmill(["install", host], user / "proj", user, umask=umask)
                slowed += seconds > 30
                for name in names:
                    tried += 1
                    backup = user / (name + ".ctxmill.bak")
                    leaked += not backup.exists() or bool(stat_mode(backup) & ~mode)
    return [("install", "backups of files holding keys (3 modes x 2 umasks x 2 hosts)", tried, 0, leaked, slowed)]


def local_trust() -> int:
    """Runs the local-trust faces, prints their table; 1 when anything was lost, leaked or slow."""
    started = time.monotonic()
    if str(ROOT) not in sys.path:  # the harness lives in tests/trust/kit.py
        sys.path.insert(0, str(ROOT))
    from bench.trust_faces import FACES  # provenance, foreign homes, hostile home files, imports

    rows = []
    data_home = os.environ.get("XDG_DATA_HOME")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_DATA_HOME"] = str(Path(tmp) / "data")  # the user's CCR store and config: the run's own
        from bench.adversarial_channel import local_channel_faces

        faces = (engine_socket_face, cloned_repo_face, browser_origin_face, install_backup_face,
                 local_channel_faces, *FACES)
        for face in faces:
            folder = Path(tmp) / face.__name__
            folder.mkdir()
            rows += face(folder)
    if data_home is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = data_home
    print("\n" + TRUST_HEADER)
    for face, what, *counts in rows:
        print(f"| {face} | {what} | " + " | ".join(map(_shown, counts)) + " |")
    print(f"\nlocal trust: {time.monotonic() - started:.0f} s")
    return int(any(n for row in rows for n in row[3:] if n))


if __name__ == "__main__":
    if "--local-trust" in sys.argv:
        sys.exit(local_trust())
    sys.exit(max(main(), local_trust()))
