"""Session start's summary of the last checkpoint: Next steps and Critical context survive a long task."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from memory_helpers import JIEBA_CACHE

from compress.formats.sessions.transcript import Transcript
from memory.checkpoint import CheckpointConfig, write_checkpoint
from memory.config import MemoryConfig
from memory.summary import latest_summary, summarize

STEPS = ["add the logout route", "write tests for the session expiry", "update the login template",
         "wire the CSRF token into the form", "document the new settings in the README"]


def _long_session() -> Transcript:
    task = ("Rework the login flow of the billing portal. " + "The current flow keeps state in a cookie and "
            "re-reads the user record on every request, which is slow and fragile. " * 30)
    later = "Also keep the old endpoints working for the mobile app. " * 25
    reply = ("Done with the handler. Important: never log the session token. Next steps: "
             + "; ".join(STEPS) + ".")
    return Transcript(format="test", provider="anthropic", messages=[
        {"role": "user", "content": task},
        {"role": "assistant", "content": "Reading the code first."},
        {"role": "user", "content": later},
        {"role": "assistant", "content": reply},
    ])


def test_a_long_task_leaves_next_steps_and_critical_context_in_the_summary(tmp_path):
    home = tmp_path / ".ctxmill"
    cfg = CheckpointConfig(MemoryConfig(home, tmp_path / "g", cache_dir=JIEBA_CACHE), home / "ccr")
    markdown = write_checkpoint(cfg, _long_session(), "s1").markdown
    assert len(markdown.split("## Task")[1].split("## Progress")[0]) > 1500  # the task alone outgrows the budget
    summary = latest_summary(home)
    assert len(summary) <= 1500
    assert "## Task" in summary and "Rework the login flow" in summary
    assert "## Next steps" in summary and "## Critical context" in summary
    for step in STEPS:
        assert step in summary
    assert "never log the session token" in summary


section = st.text(st.sampled_from("ab \n-"), max_size=3000)


@settings(max_examples=200)
@given(section, section, section, st.integers(200, 3000))
def test_the_summary_fits_its_budget_and_short_sections_stay_whole(task, steps, critical, budget):
    text = (f"# Checkpoint: session s\n\n_stamp_\n\n## Task\n\n{task}\n\n## Progress\n\nx\n\n## Next steps\n\n{steps}"
            f"\n\n## Critical context\n\n{critical}\n")
    summary = summarize(text, budget)
    assert len(summary) <= budget
    for name, body in (("Task", task), ("Next steps", steps), ("Critical context", critical)):
        assert f"## {name}" in summary
        whole = f"## {name}\n\n{body}".strip()
        if len(whole) <= (budget - 60) // 3:  # within an even share: never cut
            assert whole in summary
