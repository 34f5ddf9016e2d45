"""The dashboard in a real headless browser (Debian's chromium driven by Playwright): after a
scripted session through the proxy, the page at /ctxmill/ loads with no console error, its totals
are the ledger's (`ctxmill stats --json`), its charts are drawn and the savings bars add up to the
headline, it names the client's session id, shows what the ledger gets while it is open, keeps
to the period chosen, and the memory browser pins and forgets. The replay page draws modelled and
effective cost, no time axis and no empty project table. A screenshot is kept in the test's
folder and copied to /tmp/ctxmill-dashboard.png."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxmill.ledger import project_of, record_expansion
from memory import api
from tests.helpers import eventually
from tests.proxy_fixtures import fake, start_proxy, upstream  # noqa: F401 - fixtures
from tests.test_ledger_faces import ledger_summary, scripted_session

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
SCREENSHOT = Path("/tmp/ctxmill-dashboard.png")
REPO = Path(__file__).resolve().parents[1]

playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed (apt-get install chromium)")


def money(d: float) -> str:
    """The page's money format (dashboard.js `money`)."""
    return f"${d:,.2f}" if abs(d) >= 1 else f"${d:.4f}"


@pytest.fixture
def browser():
    with playwright_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def test_the_dashboard_shows_the_ledger_in_a_real_browser(fake, start_proxy, tmp_path, browser):
    xdg = tmp_path / "xdg"
    ledger = xdg / "ctxmill" / "ledger.sqlite3"
    home = tmp_path / "shop-app" / ".ctxmill"
    proxy = start_proxy(home=home, ledger_file=ledger, ccr_dir=tmp_path / "ccr")
    claude_code = "ab363f54-381f-47b8-a43b-67d636010a2f"
    sent = scripted_session(
        proxy.url,
        fake,
        "/home/dev/shop-app",
        "user_a",
        headers={"X-Claude-Code-Session-Id": claude_code},
    )
    sent += scripted_session(proxy.url, fake, "/home/dev/billing", "user_b")
    record_expansion(face="mcp", chars=420, session="", project=project_of("/home/dev/shop-app"), path=ledger)
    eventually(lambda: ledger.exists() and ledger_summary(ledger)["totals"]["requests"] == sent)
    from ctxmill.settings import Settings

    cfg = Settings.load(home).memory
    keep = api.store(cfg, "decision", "Use SQLite in WAL mode for the savings ledger")
    drop = api.store(cfg, "gotcha", "The billing tests need a running Redis")
    (home / "checkpoint.md").write_text("# Checkpoint\n\n## Task\nShip the dashboard\n\n## Next steps\n- screenshot\n")

    out = subprocess.run([sys.executable, "-m", "ctxmill", "stats", "--json"], capture_output=True, text=True,
                         env={**os.environ, "XDG_DATA_HOME": str(xdg), "PYTHONPATH": str(REPO)})
    stats = json.loads(out.stdout)
    t = stats["totals"]
    assert t["requests"] == sent and t["sessions"] == 2 and t["projects"] == 2 and t["expansions"] == 1

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.goto(proxy.url + "/ctxmill/")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)

    shown = {name: page.get_attribute(f"#total-{name.replace('_', '-')}", "data-value")
             for name in ("cost_without", "cost_with", "cost_saved", "tokens_before", "tokens_after", "requests",
                          "sessions", "projects", "expansions")}
    assert {k: float(v) for k, v in shown.items()} == {k: float(t[k]) for k in shown}
    assert page.inner_text("#total-cost-saved") == money(t["cost_saved"])
    assert page.inner_text("#total-tokens-before") == f"{t['tokens_before']:,}"
    assert page.inner_text("#total-requests") == f"{t['requests']:,}"
    charts = page.evaluate("() => Object.values(Chart.instances).map(c => [c.canvas.id, c.data.datasets[0].data.length])")
    drawn = dict(charts)
    assert drawn["chart-days"] == len(stats["days"])
    assert drawn["chart-stages"] == len(stats["saved_by_stage"]) > 0
    assert drawn["chart-session"] == stats["sessions"][0]["requests"]
    bars = page.evaluate(
        "() => ['chart-stages', 'chart-kinds'].map(id => Chart.getChart(id).data.datasets[0].data)"
    )
    assert [sum(b) for b in bars] == [t["tokens_saved"]] * 2  # they add up to the headline
    assert page.locator("#sessions tr").count() == 1 + len(stats["sessions"])
    assert claude_code in page.inner_text(
        "#sessions"
    )  # the id Claude Code names its session (and transcript) by
    assert page.locator("#models tr").count() == 1 + len(stats["models"]) == 2
    assert "Ship the dashboard" in page.inner_text("#memory-checkpoint")

    page.fill("#memory-query", "Redis billing")
    page.click("#memory-search button")
    page.wait_for_selector(f"#memory-entries li[data-id='{drop.id}']")
    page.click(f"#memory-entries li[data-id='{drop.id}'] button.forget")
    page.wait_for_selector(f"#memory-entries li[data-id='{drop.id}']", state="detached")
    page.fill("#memory-query", "")
    page.click("#memory-search button")
    page.click(f"#memory-entries li[data-id='{keep.id}'] button.pin")
    page.wait_for_selector(f"#memory-pinned li[data-id='{keep.id}']")
    assert [e.id for e in api.list_entries(cfg)] == [keep.id] and [e.id for e in api.pinned(cfg)] == [keep.id]

    from ctxmill.ledger.store import Ledger, Project, RequestRow

    with Ledger.open(
        ledger
    ) as db:  # recorded while the page is open, 40 days ago: all time shows it, the month not
        db.add_request(
            RequestRow(
                "cli",
                "old",
                Project("p", "old-app"),
                "gpt-5",
                "gpt-5",
                900,
                300,
                0.1,
                0.03,
                ts=__import__("time").time() - 40 * 86400,
            )
        )
    page.wait_for_function(
        f"() => document.querySelector('#total-requests').dataset.value == '{sent + 1}'",
        timeout=20_000,
    )
    page.select_option("#range", "30")
    page.wait_for_function(
        f"() => document.querySelector('#total-requests').dataset.value == '{sent}'", timeout=20_000
    )
    assert "old-app" not in page.inner_text("#projects")
    page.select_option("#range", "all")
    page.wait_for_function(
        "() => document.querySelector('#projects').innerText.includes('old-app')", timeout=20_000
    )

    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
    shutil.copyfile(tmp_path / "dashboard.png", SCREENSHOT)
    assert problems == []
    assert not any(r.path.startswith("/ctxmill") or r.path == "/" for r in fake.received)  # none went upstream


def test_replay_html_draws_the_replay_beside_the_cap_in_a_real_browser(tmp_path, browser):
    html, report = tmp_path / "replay.html", tmp_path / "replay.json"
    with report.open("w") as out:
        run = subprocess.run([sys.executable, "-m", "ctxmill", "replay", str(REPO / "fixtures" / "example-request.json"),
                              "--json", "--html", str(html)], stdout=out, stderr=subprocess.PIPE, text=True,
                             cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr
    data = json.loads(report.read_text())
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: problems.append(f"network: {r.url}") if not r.url.startswith("file:") else None)
    page.goto(html.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    assert int(page.get_attribute("#total-tokens-before", "data-value")) == data["raw"]["tokens_sum"]
    assert int(page.get_attribute("#total-tokens-after", "data-value")) == data["compressed"]["tokens_sum"]
    assert int(page.get_attribute("#total-requests", "data-value")) == data["requests"]
    series = page.evaluate("() => Chart.getChart('chart-session').data.datasets.map(d => [d.label, d.data])")
    assert series == [["raw (tokens)", data["raw"]["sizes"]], ["sent (tokens)", data["compressed"]["sizes"]],
                      ["cap (tokens)", data["cap"]["sizes"]]]
    peers = page.evaluate("() => Chart.getChart('chart-peers').data")
    assert dict(zip(peers["labels"], peers["datasets"][0]["data"])) == {
        "cap": data["sides"]["cap"]["cost_ratio"], "ctxmill": data["cost_ratio"]}
    assert dict(zip(peers["labels"], peers["datasets"][1]["data"], strict=True)) == {
        side: data["sides"][side]["effective_ratio"] for side in ("cap", "ctxmill")
    }
    effective = float(page.get_attribute("#total-cost-effective-with", "data-value"))
    assert effective == pytest.approx(
        data["sides"]["ctxmill"]["effective_cost"] * 3.0 / 1e6, abs=1e-6
    )  # Sonnet input
    assert page.is_visible("#effective-card") and page.is_hidden(
        "#days-panel"
    )  # no time axis of file names
    assert page.is_hidden("#projects-panel") and page.is_hidden(
        "#projects-part"
    )  # no "1 projects" over nothing
    assert page.inner_text("#sessions-word") == "session"
    assert page.is_hidden("#memory-panel") and page.is_hidden("#controls")
    page.screenshot(path=str(tmp_path / "replay.png"), full_page=True)
    assert problems == []
