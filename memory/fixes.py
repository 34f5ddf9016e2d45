"""Gotchas: a failed call and what fixed it, without any LLM.

`pair_fixes(calls)` looks for each error's fix among the calls after it, in a window of
`FIX_WINDOW` acting turns (turns that change files or run commands doing more than look):
a failed edit is fixed by a later change to the same file; a failed command by what was done
before a re-run of it got past the error (a change to a file first), else by the re-run; else
by the call most related to the error (names the files, programs, flags the error names), else
by an edit made within `NEXT_EDIT` acting turns.
Must hold: a "fix" that only looks (ls, cat, git status, a test run) never counts, nor a result
that repeats the error (`cmd | head` hides the exit code). Failed reads, searches and bookkeeping
calls, results that say nothing but "Exit code 1", and refused calls are not errors awaiting a
fix. An error that comes back stands for its earlier occurrences. Deterministic, and linear in
the number of calls (the search looks at a bounded window after each error).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import regex

from compress.vocab.commands import command_words, looks_only, main_command, same_command
from compress.vocab.signals.errors import says_nothing, telling_error_line
from compress.vocab.tools import BOOKKEEPING_TOOLS, ToolKind, base_name

FIX_WINDOW = 15  # acting turns after an error in which its fix is looked for
NEXT_EDIT = 2  # an edit this soon after an error fixes it when nothing else relates to the error
MAX_ERROR = 300  # characters of the telling error line a gotcha keeps
_TOKEN = regex.compile(r"[\w./\\@:+-]{4,}")
_LINE_SUFFIX = regex.compile(r"(?::\d+)+$")
_LOOKING_KINDS = frozenset({ToolKind.FILE_READ, ToolKind.SEARCH, ToolKind.FILE_LIST, ToolKind.SUBAGENT_WEB})


@dataclass(frozen=True)
class Gotcha:
    """A failed call and what fixed it (`fix` empty: nothing did, an unresolved error)."""

    error: str  # the most telling error line
    fix: str  # what fixed it: "Edit path" / "Bash: command"; "" when nothing did
    turn: int
    detail: str  # the whole failed result (goes to CCR when long)


@dataclass
class Call:
    """One tool call as the checkpoint reads it: what it changes, its result, how it ended."""

    name: str
    input: Any
    turn: int
    kind: ToolKind
    command: str
    changes: list  # FileTouch of the files it changes
    result: str = ""
    failed: bool = False
    refused: bool = False

    def label(self, rerun: bool = False) -> str | None:
        """How the call reads as a fix: "Edit path" / "Bash: command"; None for a call that only
        looks (unless `rerun`: a re-run of a failed command may only look)."""
        if self.changes:
            return f"{self.name} " + ", ".join(t.path for t in self.changes[:3])
        if self.kind is ToolKind.COMMAND and self.command and (rerun or not looks_only(self.command)):
            return f"{self.name}: {self.command[:160]}"
        return None

    def acts(self) -> bool:
        return bool(self.changes) or bool(self.command) and not looks_only(self.command)

    def succeeded(self, error: str) -> bool:
        """It did not fail, and its output does not repeat the error (`cmd | head` hides the exit code)."""
        return not self.failed and not self.refused and error[:80] not in self.result

    def got_past(self, error: str) -> bool:
        """A re-run whose output no longer shows the error (it may fail further on)."""
        return not self.refused and error[:80] not in self.result


def pair_fixes(calls: list[Call]) -> tuple[list[Gotcha], list[Gotcha]]:
    """The gotchas (errors with their fix) and the unresolved errors of `calls`, in call order."""
    gotchas: list[Gotcha] = []
    unresolved: list[Gotcha] = []
    errors = []
    for i, call in enumerate(calls):
        if not call.failed or call.kind in _LOOKING_KINDS or base_name(call.name) in BOOKKEEPING_TOOLS:
            continue
        error = telling_error_line(call.result)[:MAX_ERROR]
        if not says_nothing(error):  # "Exit code 1" alone: a search that found nothing, a check that said no
            errors.append((i, call, error))
    for n, (i, call, error) in enumerate(errors):
        again = next((j for j, _, e in errors[n + 1:] if e == error), len(calls))
        fix = _fix_for(call, calls[i + 1:again], error)
        if fix is None and again < len(calls):
            continue  # the same error came back: its later occurrence stands for it
        gotcha = Gotcha(error, fix or "", call.turn, call.result)
        (gotchas if fix else unresolved).append(gotcha)
    return gotchas, unresolved


def _fix_for(failed: Call, later: list[Call], error: str) -> str | None:
    """What fixed `failed`, from the calls after it (see the module docstring)."""
    window: list[Call] = []
    acting, last_turn, soon = 0, failed.turn, None
    for call in later:
        if call.acts() and call.turn != last_turn:
            acting, last_turn = acting + 1, call.turn
        if acting > FIX_WINDOW:
            break
        window.append(call)
        if soon is None and acting <= NEXT_EDIT and call.changes and call.kind is not ToolKind.COMMAND \
                and call.succeeded(error):
            soon = call
    target = {t.path for t in failed.changes}
    if target:  # a failed edit is fixed by a later change to the same file
        return next((c.label() for c in window if c.succeeded(error) and any(t.path in target for t in c.changes)), None)
    error_tokens = _tokens(failed.result) | _tokens(error)
    input_tokens = _tokens(failed.command)
    words = set(failed.result.lower().replace("'", " ").replace('"', " ").split())
    main = main_command(failed.command) if failed.command else None

    def related(call: Call, rerun: bool) -> int:
        """What the call has in common with the error: the tokens it names, the programs and
        subcommands its output mentions, and (not for re-runs) what the failed command named."""
        tokens = _tokens(call.command or " ".join(t.path for t in call.changes))
        parts = {p for w in command_words(call.command) for p in w[:2]} if call.command else set()
        score = 2 * _overlap(error_tokens, tokens) + len({p.lower() for p in parts} & words)
        same_input = 0 if rerun else _overlap(input_tokens, tokens)
        return score + (same_input if same_input >= 2 else 0)

    def best(candidates: list[Call], need: int = 1, rerun: bool = False) -> str | None:
        """The most related candidate (changes to files first on a tie, then the earliest)."""
        scored = [(related(c, rerun), bool(c.changes), -k, c) for k, c in enumerate(candidates)]
        scored = [x for x in scored if x[0] >= need]
        return max(scored, key=lambda x: x[:3])[3].label(rerun=True) if scored else None

    reruns = [k for k, c in enumerate(window) if main and c.command and same_command(c.command, main)]
    done = next((k for k in reruns if window[k].got_past(error)), None)
    if done is not None:
        steps = [c for c in window[:done] if c.succeeded(error) and c.label()
                 and not (main and c.command and same_command(c.command, main))]
        edits = [c for c in steps if c.changes]
        passed = [window[k] for k in reruns if window[k].got_past(error)]
        return best(edits, 1) or best(edits, 0) or best(steps, 0) or best(passed, 0, rerun=True)
    return best([c for c in window if c.succeeded(error) and c.label()]) or (soon.label() if soon else None)


def _tokens(text: str) -> set[str]:
    """Salient tokens of a text: paths, file names, flags and identifiers (holding . / _ - or a
    digit), lower-cased, without line numbers and leading ./ or /."""
    out = set()
    for token in _TOKEN.findall(text[:20_000]):
        token = _LINE_SUFFIX.sub("", token.strip(".:,-")).replace("\\", "/").lower().lstrip("./")
        if len(token) >= 4 and any(c in token for c in "./_-") or len(token) >= 5 and any(c.isdigit() for c in token):
            out.add(token)
            last = token.rsplit("/", 1)[-1]
            if "/" in token and "." in last and len(last) >= 4:
                out.add(last)
    return out


def _overlap(wanted: set[str], tokens: set[str]) -> int:
    """How many of `wanted` (5 characters or more) occur in one of `tokens`."""
    return sum(1 for w in wanted if len(w) >= 5 and any(w in t for t in tokens))
