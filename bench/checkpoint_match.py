"""Match a checkpoint's sections against hand labels (bench/labels/checkpoint_labels.json).

`parse(markdown)` splits a checkpoint.md into the labelled sections, one item per line the
checkpoint shows (ctxmill markers removed); `score(parsed, label)` compares them with one
session's labels and returns, per section, how many shown items match a label (precision)
and how many required labels some shown item matches (recall).

Matching rules (also stated in the labels file):
- an item matches a label when every entry of the label's `terms` occurs in it, case-insensitive
  with whitespace collapsed; an entry that is a list matches when any of its strings occurs;
- a file matches when the shown path ends with the labelled path at a path boundary (`\\` and
  `/` are the same separator);
- an error matches when its `error` terms occur in the error part and, when `fix` is a list, its
  terms occur in the fix part; `fix: null` means nothing fixed it, so a line saying "fixed by"
  does not match; `fix: "any"` accepts either;
- `optional` labels are not needed for recall, but a shown item matching one is not a false
  positive.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

LABELS = Path(__file__).resolve().parent / "labels" / "checkpoint_labels.json"
SECTIONS = ("task", "decisions", "constraints", "files", "errors", "next_steps")
HEADINGS = {"Task": "task", "Decisions": "decisions", "Constraints": "constraints", "Files changed": "files",
            "Errors → fixes": "errors", "Next steps": "next_steps", "Critical context": "critical"}
_MARKER = re.compile(r"\[ctxmill:[^\]]*\]")
_SPACE = re.compile(r"\s+")
_ERROR_LINE = re.compile(r"^- `(?P<error>.*?)`(?P<rest>\s*(?:→|->).*)?$")
_FILE_LINE = re.compile(r"^- `(?P<path>[^`]+)`")
_FIXED = re.compile(r"(?:→|->)\s*fixed by\s*(?P<fix>.*)$")


def load_labels(path: Path = LABELS) -> dict:
    return json.loads(path.read_text("utf-8"))["sessions"]


def norm(text: str) -> str:
    return _SPACE.sub(" ", _MARKER.sub(" ", text)).strip().casefold()


def has_terms(text: str, terms: list) -> bool:
    """Every entry of `terms` occurs in `text` (an entry that is a list: any of its strings)."""
    low = norm(text)
    for term in terms:
        options = term if isinstance(term, list) else [term]
        if not any(norm(option) in low for option in options):
            return False
    return True


def _path(text: str) -> str:
    return text.replace("\\", "/").strip().casefold()


def path_matches(shown: str, labelled: str) -> bool:
    shown, labelled = _path(shown), _path(labelled)
    boundary = labelled if labelled.startswith("/") else "/" + labelled
    return shown == labelled or shown.endswith(boundary)


@dataclass
class Error:
    error: str
    fix: str | None  # None: the line does not claim a fix
    line: str


@dataclass
class Parsed:
    task: list[str] = field(default_factory=list)  # [first request, latest request?]
    decisions: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    errors: list[Error] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)


def _sections(markdown: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in markdown.splitlines():
        if line.startswith("## "):
            current = HEADINGS.get(line[3:].strip())
            if current:
                out[current] = []
            continue
        if current and line.strip() and line.strip() != "(none)":
            out[current].append(line.rstrip())
    return out


def _bullets(lines: list[str]) -> list[str]:
    items = []
    for line in lines:
        if not line.startswith("- "):
            continue
        text = line[2:]
        if text.startswith(("[ ] ", "[x] ")):
            text = text[4:]
        if not norm(text):
            continue  # a marker naming earlier, hidden items
        items.append(text)
    return items


def _errors(lines: list[str]) -> list[Error]:
    out = []
    for line in lines:
        m = _ERROR_LINE.match(line)
        if not m or not m.group("rest"):
            continue
        fixed = _FIXED.search(m.group("rest"))
        out.append(Error(m.group("error"), fixed.group("fix") if fixed else None, line))
    return out


def parse(markdown: str) -> Parsed:
    sec = _sections(markdown)
    task_lines = sec.get("task", [])
    first = [line for line in task_lines if not line.startswith("Latest request:")]
    latest = [line[len("Latest request:"):].strip() for line in task_lines if line.startswith("Latest request:")]
    task = [" ".join(first)] if first and first[0] != "(no user request recorded)" else []
    return Parsed(
        task=task + latest,
        decisions=_bullets(sec.get("decisions", [])),
        constraints=_bullets(sec.get("constraints", [])),
        files=[m.group("path") for line in sec.get("files", []) if (m := _FILE_LINE.match(line))],
        errors=_errors(sec.get("errors", []) + sec.get("critical", [])),
        next_steps=_bullets(sec.get("next_steps", [])),
    )


def error_matches(shown: Error, label: dict) -> bool:
    if not has_terms(shown.error, label["error"]):
        return False
    if label.get("fix") is None:
        return shown.fix is None
    if label["fix"] == "any":
        return True
    return shown.fix is not None and has_terms(shown.fix, label["fix"])


def _file_label(item) -> dict:
    return item if isinstance(item, dict) else {"path": item}


@dataclass
class Score:
    shown: int = 0  # items the checkpoint shows
    correct: int = 0  # of them, matching a label
    wanted: int = 0  # required labels
    found: int = 0  # of them, matched by a shown item
    misses: list[str] = field(default_factory=list)  # required labels not found
    wrong: list[str] = field(default_factory=list)  # shown items matching no label

    def add(self, other: Score) -> None:
        self.shown += other.shown
        self.correct += other.correct
        self.wanted += other.wanted
        self.found += other.found

    @property
    def precision(self) -> float | None:
        return self.correct / self.shown if self.shown else None

    @property
    def recall(self) -> float | None:
        return self.found / self.wanted if self.wanted else None


def _score(shown: list, labels: list[dict], match) -> Score:
    s = Score(shown=len(shown), wanted=sum(not lab.get("optional") for lab in labels))
    for item in shown:
        if any(match(item, lab) for lab in labels):
            s.correct += 1
        else:
            s.wrong.append(item.line if isinstance(item, Error) else item)
    for lab in labels:
        if lab.get("optional"):
            continue
        if any(match(item, lab) for item in shown):
            s.found += 1
        else:
            s.misses.append(lab.get("text") or lab.get("path") or "")
    return s


def task_score(parsed: Parsed, label: dict) -> Score:
    """First shown request must be the person's task; the latest request may be any shown item."""
    labels = [label["task"]] + ([label["latest"]] if label.get("latest") else [])
    s = Score(shown=len(parsed.task), wanted=len(labels))
    for item in parsed.task:
        if any(has_terms(item, lab["terms"]) for lab in labels):
            s.correct += 1
        else:
            s.wrong.append(item)
    if parsed.task and has_terms(parsed.task[0], label["task"]["terms"]):
        s.found += 1
    else:
        s.misses.append(label["task"]["text"])
    if label.get("latest"):
        if any(has_terms(item, label["latest"]["terms"]) for item in parsed.task):
            s.found += 1
        else:
            s.misses.append(label["latest"]["text"])
    return s


_HOST_TEXT = re.compile(r"<(?:task-notification|command-name|command-message|system-reminder|local-command-stdout)>"
                        r"|This session is being continued from a previous conversation", re.IGNORECASE)


def task_is_request(parsed: Parsed, label: dict) -> bool:
    """The Task names the person's request and carries no host-injected text."""
    return bool(parsed.task) and has_terms(parsed.task[0], label["task"]["terms"]) and not _HOST_TEXT.search(parsed.task[0])


def score(parsed: Parsed, label: dict) -> dict[str, Score]:
    terms = lambda item, lab: has_terms(item, lab["terms"])  # noqa: E731
    return {
        "task": task_score(parsed, label),
        "decisions": _score(parsed.decisions, label["decisions"], terms),
        "constraints": _score(parsed.constraints, label["constraints"], terms),
        "files": _score(parsed.files, [_file_label(f) for f in label["files"]],
                        lambda item, lab: path_matches(item, lab["path"])),
        "errors": _score(parsed.errors, label["errors"], error_matches),
        "next_steps": _score(parsed.next_steps, label["next_steps"], terms),
    }
