"""Distilled skills: tool and command sequences that recur across tasks, as skill candidates.

`mine(sequences, tasks=…)` takes each session's normalised steps (`memory.history.steps`:
program and sub-command, `(edit)` for a file change) and finds the contiguous runs of 2 to
`MAX_STEPS` steps that occur in sessions of at least `min_sessions` distinct tasks. Must hold:
- deterministic: the same sessions give the same candidates in the same order, whatever the
  order of the mapping; repeats of a step in a row count as one (a test run twice is one run);
- support counts distinct tasks, not sessions: sessions given the same task (`tasks`: session
  key -> its task, e.g. its first prompt; eight replays of one SWE-agent task are one) count once;
- a candidate is a routine a person would write down (`offerable`): it neither starts nor ends
  with an edit, repeats no command except as a fix loop (`pytest → (edit) → pytest`), and has two
  different commands that do something (`LOOKS`, steps that only inspect, like `git log` or
  `mkdir`, do not count), or is such a loop;
- maximal, at any length: every frequent run is found (a run is extended only while it stays
  frequent), and a run is dropped when an offerable run one step longer around it has as many
  tasks;
  a run inside a candidate already chosen is offered only when it has more tasks;
- a step that cannot be undone or that carries a credential (`memory.skill_file.risk`) is never
  proposed silently: a candidate holding one is left out unless `allow_risky`, and then its
  skill says so before the step;
- names are unique among the candidates returned (a suffix `-2`, `-3` … where two would meet);
- ranked by tasks × (steps − 1), then by tasks, then longer first, then by the steps' text.
Rendering and writing skill files: `memory.skill_file`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memory.history.steps import EDIT_STEP

_SLUG = re.compile(r"[^a-z0-9]+")
MAX_STEPS = 16
LOOKS = frozenset({"git status", "git log", "git diff", "git show", "git remote", "git branch", "git fetch",
                   "mkdir", "find", "tree", "stat", "file", "du", "df", "ps", "env", "whoami", "uname", "type",
                   "dir", "npm ls", "npm view", "pip list", "pip show", "pip freeze", "docker ps", "docker images",
                   "docker logs", "kubectl get", "kubectl describe", "curl", "wget", "open", "code", "python"})
"""Steps that only look around (or start an interpreter with no script): no routine on their own."""

Step = tuple[str, str]  # (step, an example of it: the command or tool it came from)


@dataclass(frozen=True)
class Candidate:
    steps: tuple[str, ...]
    sessions: tuple[str, ...]
    """Keys of the sessions the run occurs in, sorted."""
    examples: tuple[str, ...]
    """For each step, the command it came from in the first session (by key) that has the run."""
    tasks: int = 0
    """Distinct tasks among `sessions` (0: as many as sessions)."""
    name: str = ""
    """Unique among the candidates `mine` returned (`base_name` when empty)."""
    risky: tuple[str, ...] = ()
    """For each step, why it cannot be undone or is sensitive ("" when it is neither)."""

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", base_name(self.steps))
        if not self.tasks:
            object.__setattr__(self, "tasks", len(self.sessions))
        if not self.risky:
            object.__setattr__(self, "risky", ("",) * len(self.steps))

    @property
    def description(self) -> str:
        return (f"Recurring routine from {self.tasks} past tasks: " + " → ".join(
            "edit files" if s == EDIT_STEP else s for s in self.steps) + ". Use it when doing this again.")


def base_name(steps: Sequence[str]) -> str:
    words: list[str] = []
    for step in steps:
        for word in _SLUG.sub(" ", step.lower()).split():
            if word not in words and word not in ("run", "m"):
                words.append(word)
    slug = "-".join(words)[:52].strip("-")
    return "ctxmill-" + (slug or "routine")


def _collapsed(steps: Sequence[Step]) -> list[Step]:
    out: list[Step] = []
    for step in steps:
        if not out or out[-1][0] != step[0]:
            out.append(step)
    return out


def _frequent(names: Mapping[str, list[str]], task_of: Mapping[str, str], min_tasks: int):
    """Every run of 2..MAX_STEPS steps held by sessions of `min_tasks` tasks: run -> its
    sessions (sorted), grown one step at a time from the frequent runs one shorter."""
    found: dict[tuple[str, ...], list[str]] = {}
    level: dict[tuple[str, ...], list[str]] = {}
    for n in range(2, MAX_STEPS + 1):
        level = {}
        for key in sorted(names):
            seq = names[key]
            for i in range(len(seq) - n + 1):
                run = tuple(seq[i:i + n])
                if n > 2 and (run[:-1] not in found or run[1:] not in found):
                    continue
                holders = level.setdefault(run, [])
                if not holders or holders[-1] != key:
                    holders.append(key)
        level = {run: keys for run, keys in level.items() if len({task_of[k] for k in keys}) >= min_tasks}
        if not level:
            break
        found.update(level)
    return found


def mine(sequences: Mapping[str, Sequence[Step]], min_sessions: int = 2, limit: int = 5,
         tasks: Mapping[str, str] | None = None, allow_risky: bool = False) -> list[Candidate]:
    """The best `limit` candidates among the sessions' steps (see the module's rules)."""
    from memory.skill_file import risk

    collapsed = {key: _collapsed(sequences[key]) for key in sorted(sequences)}
    names = {key: [s for s, _ in steps] for key, steps in collapsed.items()}
    task_of = {key: (tasks or {}).get(key) or key for key in names}
    support = _frequent(names, task_of, min_sessions)

    def count(run: tuple[str, ...]) -> int:
        return len({task_of[k] for k in support.get(run, ())})

    offered = [run for run in support if offerable(run)]
    widest: dict[tuple[str, ...], int] = {}  # run -> the most tasks of an offerable run one step longer around it
    for run in offered:
        for shorter in (run[:-1], run[1:]):
            widest[shorter] = max(widest.get(shorter, 0), count(run))
    maximal = [run for run in offered if widest.get(run, 0) < count(run)]
    maximal.sort(key=lambda run: (-count(run) * (len(run) - 1), -count(run), -len(run), run))
    chosen: list[Candidate] = []
    taken: set[str] = set()
    for run in maximal:
        if any(_inside(run, c.steps) and count(run) <= c.tasks for c in chosen):
            continue
        key = support[run][0]
        examples = _examples(collapsed[key], run)
        risky = tuple(risk(step, example) for step, example in zip(run, examples, strict=True))
        if any(risky) and not allow_risky:
            continue
        name, n = base_name(run), 2
        while name in taken:
            name, n = f"{base_name(run)[:60]}-{n}", n + 1
        taken.add(name)
        chosen.append(Candidate(run, tuple(support[run]), examples, count(run), name, risky))
        if len(chosen) >= limit:
            break
    return chosen


def offerable(run: tuple[str, ...]) -> bool:
    """Whether a run reads as a routine (the module's rules)."""
    if run[0] == EDIT_STEP or run[-1] == EDIT_STEP:
        return False
    loop = False
    for i, step in enumerate(run):
        if step == EDIT_STEP or step not in run[i + 1:]:
            continue
        if run.count(step) > 2 or run[i + 1:i + 3] != (EDIT_STEP, step):
            return False
        loop = loop or step not in LOOKS
    doing = {s for s in run if s != EDIT_STEP and s not in LOOKS}
    return len(doing) >= 2 or loop


def _examples(steps: list[Step], run: tuple[str, ...]) -> tuple[str, ...]:
    names = [s for s, _ in steps]
    at = next(i for i in range(len(names) - len(run) + 1) if tuple(names[i:i + len(run)]) == run)
    return tuple(e for _, e in steps[at:at + len(run)])


def _inside(run: tuple[str, ...], longer: tuple[str, ...]) -> bool:
    return any(longer[i:i + len(run)] == run for i in range(len(longer) - len(run) + 1))


def steps_of_rows(rows: Iterable) -> list[Step]:
    """The steps of history rows (`memory.history.messages.Row`), in order."""
    return [tuple(step) for row in rows for step in row.steps]


def task_of_rows(rows: Iterable) -> str:
    """A session's task: its first prompt (whitespace collapsed, first 500 characters)."""
    first = next((row.text for row in rows if row.role == "user" and row.text.strip()), "")
    return " ".join(first.split())[:500]
