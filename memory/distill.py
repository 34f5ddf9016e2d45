"""Distilled skills: tool and command sequences that recur across sessions, as skill candidates.

`mine(sequences)` takes each session's normalised steps (`memory.history.steps`: program and
sub-command, `(edit)` for a file change) and finds the contiguous runs of 2 to `max_len` steps
that occur in at least `min_sessions` sessions. Must hold:
- deterministic: the same sessions give the same candidates in the same order, whatever the
  order of the mapping; repeats of a step in a row count as one (a test run twice is one run);
- a candidate names at least two different steps and at least one command (not only edits);
- maximal: a run is dropped when a longer run containing it occurs in as many sessions, and a
  run inside a candidate already chosen is offered only when it occurs in more sessions;
- ranked by sessions × (steps − 1), then by sessions, then longer first, then by the steps' text.
`render(candidate)` is a SKILL.md (YAML front matter `name` / `description`, the format Claude
Code and OpenCode both read) carrying `MARK`; `write(candidate, folder)` writes
`<folder>/<name>/SKILL.md` unless a file there lacks `MARK` (a person's skill is never replaced).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from memory.history.steps import EDIT_STEP

MARK = "<!-- written by ctxmill distill: ctxmill may rewrite this file while this line is here; delete the line to keep your edits -->"
_SLUG = re.compile(r"[^a-z0-9]+")

Step = tuple[str, str]  # (step, an example of it: the command or tool it came from)


@dataclass(frozen=True)
class Candidate:
    steps: tuple[str, ...]
    sessions: tuple[str, ...]
    """Keys of the sessions the run occurs in, sorted."""
    examples: tuple[str, ...]
    """For each step, the command it came from in the first session (by key) that has the run."""

    @property
    def name(self) -> str:
        words: list[str] = []
        for step in self.steps:
            for word in _SLUG.sub(" ", step.lower()).split():
                if word not in words and word not in ("run", "m"):
                    words.append(word)
        slug = "-".join(words)[:52].strip("-")
        return "ctxmill-" + (slug or "routine")

    @property
    def description(self) -> str:
        return (f"Recurring routine from {len(self.sessions)} past sessions: " + " → ".join(
            "edit files" if s == EDIT_STEP else s for s in self.steps) + ". Use it when doing this again.")


def _collapsed(steps: Sequence[Step]) -> list[Step]:
    out: list[Step] = []
    for step in steps:
        if not out or out[-1][0] != step[0]:
            out.append(step)
    return out


def mine(sequences: Mapping[str, Sequence[Step]], min_sessions: int = 2, max_len: int = 6,
         limit: int = 5) -> list[Candidate]:
    """The best `limit` candidates among the sessions' steps (see the module's rules)."""
    support: dict[tuple[str, ...], list[str]] = {}
    example: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {}
    for key in sorted(sequences):
        steps = _collapsed(sequences[key])
        names = [s for s, _ in steps]
        seen: set[tuple[str, ...]] = set()
        for n in range(2, max_len + 2):  # one longer than offered: maximality looks one step further
            for i in range(len(names) - n + 1):
                run = tuple(names[i:i + n])
                if run in seen:
                    continue
                seen.add(run)
                support.setdefault(run, []).append(key)
                example.setdefault(run, (key, tuple(e for _, e in steps[i:i + n])))

    def count(run: tuple[str, ...]) -> int:
        return len(support.get(run, ()))

    frequent = [run for run, keys in support.items() if len(run) <= max_len and len(keys) >= min_sessions
                and len(set(run)) >= 2 and any(s != EDIT_STEP for s in run)]
    widest: dict[tuple[str, ...], int] = {}  # run -> the most sessions of a run one step longer around it
    for run in support:
        for shorter in (run[:-1], run[1:]):
            widest[shorter] = max(widest.get(shorter, 0), count(run))
    maximal = [run for run in frequent if widest.get(run, 0) < count(run)]
    maximal.sort(key=lambda run: (-count(run) * (len(run) - 1), -count(run), -len(run), run))
    chosen: list[Candidate] = []
    for run in maximal:
        if any(_inside(run, c.steps) and count(run) <= len(c.sessions) for c in chosen):
            continue
        chosen.append(Candidate(run, tuple(sorted(support[run])), example[run][1]))
        if len(chosen) >= limit:
            break
    return chosen


def _inside(run: tuple[str, ...], longer: tuple[str, ...]) -> bool:
    return any(longer[i:i + len(run)] == run for i in range(len(longer) - len(run) + 1))


def render(candidate: Candidate) -> str:
    lines = ["---", f"name: {candidate.name}", f"description: {json.dumps(candidate.description, ensure_ascii=False)}",
             "---", MARK, "", "# " + " → ".join("edit" if s == EDIT_STEP else s for s in candidate.steps), "",
             f"A routine that came back in {len(candidate.sessions)} sessions. Its steps, each with the command "
             "one of those sessions ran:", ""]
    for i, (step, example) in enumerate(zip(candidate.steps, candidate.examples), 1):
        if step == EDIT_STEP:
            lines.append(f"{i}. Change the files the previous step points at.")
        else:
            lines.append(f"{i}. `{step}`" + (f" (for example: `{' '.join(example.split())[:200]}`)"
                                                if example and example != step else ""))
    lines += ["", "Sessions: " + ", ".join(candidate.sessions[:10]) + (" …" if len(candidate.sessions) > 10 else ""),
              "", "ctxmill found this sequence by counting commands across sessions; check that it fits the task "
              "before following it.", ""]
    return "\n".join(lines)


def write(candidate: Candidate, folder: Path) -> tuple[Path, bool]:
    """Write the candidate's SKILL.md under `folder`; (path, written). Not written when a file
    there does not carry `MARK` (a skill a person wrote or took over)."""
    from ground.files import atomic_write

    path = folder / candidate.name / "SKILL.md"
    try:
        if MARK not in path.read_text("utf-8", errors="replace"):
            return path, False
    except FileNotFoundError:
        pass
    atomic_write(path, render(candidate).encode("utf-8"))
    return path, True


def steps_of_rows(rows: Iterable) -> list[Step]:
    """The steps of history rows (`memory.history.messages.Row`), in order."""
    return [tuple(step) for row in rows for step in row.steps]
