"""Checkpoint quality on the labelled corpus sessions (bench/labels/checkpoint_labels.json), and
the matcher that scores it. The corpus part skips when ../shared/corpus is absent."""

from __future__ import annotations

import pytest

from bench.checkpoint_match import load_labels, parse, score, task_is_request
from bench.checkpoint_quality import evaluate

# Floors a little under the numbers of `python bench/checkpoint_quality.py` when they were set
# (docs/memory.md, Checkpoint quality): precision, recall per section, micro-averaged over the sessions.
FLOORS = {
    "task": (1.0, 1.0),
    "decisions": (0.90, 0.40),
    "constraints": (0.90, 0.95),
    "files": (0.97, 0.97),
    "errors": (0.95, 0.95),
    "next_steps": (0.90, 0.95),
}

_MD = """# Checkpoint: session s

## Task

Work on bead spotter-dov, first ready task.

Latest request: did you push? [ctxmill: 12 chars · deep_expand("k1")]

## Decisions

- [ctxmill: 3 earlier decisions · deep_expand("k2")]
- We'll use the shared TranscriptComputers module.
- Let me verify this empirically.

## Constraints

(none)

## Files changed

- `/home/u/p/lib/a.ex` — edit
- `/tmp/smoke.log` — write

## Errors → fixes

- `fatal: no upstream branch` → fixed by Bash: git push --set-upstream origin x
- `node: command not found` → fixed by Bash: rm tmp/pids/server.pid

## Next steps

- [ ] Unfinished, the latest request: did you push?

## Critical context

- `File does not exist.` → not fixed yet
"""

_LABEL = {
    "task": {"text": "", "terms": ["bead", "spotter-dov"]},
    "latest": {"text": "", "terms": ["push"]},
    "decisions": [{"text": "shared computer", "terms": ["TranscriptComputers"]}, {"text": "x", "terms": ["nowarn"]}],
    "constraints": [],
    "files": ["lib/a.ex", {"path": "b.ex", "optional": True}],
    "errors": [{"text": "", "error": ["no upstream"], "fix": ["--set-upstream"]},
               {"text": "", "error": ["node: command not found"], "fix": None},
               {"text": "", "error": ["File does not exist"], "fix": None, "optional": True}],
    "next_steps": [{"text": "", "terms": ["push"]}],
}


def test_matcher_scores_each_section():
    parsed = parse(_MD)
    assert parsed.task == ["Work on bead spotter-dov, first ready task.", "did you push? [ctxmill: 12 chars · deep_expand(\"k1\")]"]
    s = score(parsed, _LABEL)
    assert (s["task"].correct, s["task"].shown, s["task"].found, s["task"].wanted) == (2, 2, 2, 2)
    assert (s["decisions"].correct, s["decisions"].shown, s["decisions"].found, s["decisions"].wanted) == (1, 2, 1, 2)
    assert (s["files"].correct, s["files"].shown, s["files"].found, s["files"].wanted) == (1, 2, 1, 1)
    # the node error claims a fix although nothing fixed it; the optional one counts as shown and correct
    assert (s["errors"].correct, s["errors"].shown, s["errors"].found, s["errors"].wanted) == (2, 3, 1, 2)
    assert s["constraints"].precision is None and s["constraints"].recall is None
    assert task_is_request(parsed, _LABEL)
    assert not task_is_request(parse(_MD.replace("Work on bead", "<task-notification> bead")), _LABEL)


def test_labels_are_well_formed():
    labels = load_labels()
    assert len(labels) >= 8
    assert any("compact" in (v.get("notes") or "") for v in labels.values())
    assert any(v["language"] == "zh" for v in labels.values())
    for key, label in labels.items():
        assert key.split("/")[0] in ("claude-code", "claude-flat", "codex", "craft-zh", "opencode", "swe-agent")
        assert label["task"]["terms"], key
        for section in ("decisions", "constraints", "next_steps"):
            assert all(item["terms"] for item in label[section]), (key, section)
        assert all(item["error"] for item in label["errors"]), key


@pytest.fixture(scope="module")
def quality(corpus):
    return evaluate(corpus / "transcripts")


def test_task_is_the_persons_request_on_every_labelled_session(quality):
    assert [key for key, ok in quality["task_is_request"].items() if not ok] == []


@pytest.mark.parametrize("section", list(FLOORS))
def test_precision_and_recall_stay_above_their_floors(quality, section):
    total = quality["total"][section]
    floor_p, floor_r = FLOORS[section]
    assert total.precision is not None and total.precision >= floor_p, (section, total.precision)
    assert total.recall is not None and total.recall >= floor_r, (section, total.recall)
