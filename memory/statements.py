"""What may enter MEMORY.md from a checkpoint, and which later decision replaces an earlier one.

`flaw(text, kind, root)` says why an offered note is not a memory (None when it is one): memory
holds complete statements about this project, so it leaves out
- narration: the agent speaking of what it does ("Let me check…", "Now I'll run…", "Great!");
- fragments: under three words (six characters of CJK text), a piece that starts with a joining
  word ("and then…") or ends on one ("…in the"), a cut mark (`…`, `...`), one whose subject is
  elsewhere ("This must be append-only."), or unbalanced backticks or brackets;
- host-generic errors: a gotcha whose error is one any machine gives ("command not found", "No
  such file or directory", "Permission denied", "No module named …", "Connection refused") fixed
  by installing or permitting something, or not fixed at all; and one of the agent's own tools
  ("File has not been read yet", `<tool_use_error>`, a bare "Exit code 1"), however fixed;
- other machines' paths: a home folder (`/Users/NAME/…`, `/home/NAME/…`) or a drive path
  (`C:\\…`, `E:/…`) that is neither under this project's root nor this user's home.

`Replacement.of(text, tokens)`: what a decision says it replaces. Only phrases that name the old
choice count ("instead of X", "rather than X", "no longer use X", "replace X", "switched [the database] from X",
"migrated away from X", "deprecate X", "不再使用 X", "而不是 X", "取代 X", "弃用 X"): "moved to Y"
or "switched to Y" name only the new one, and "X was replaced by Y" puts the old one first, so
neither replaces anything here. `replaces(newer, older_terms)` holds when the newer decision
names a term of the older as what it replaces AND it is about the same choice: it holds more than
COVERAGE of the older's other terms, or what it says the replacement is for (the words after the
clause, "… for CCR originals") are all in the older. "Use MySQL instead of PostgreSQL for
analytics" does not replace "Use PostgreSQL for billing", nor "Use Kafka instead of Redis as the
queue for billing" "Use Redis as the cache for billing". Pure and deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import regex

from memory.similar import overlap

COVERAGE = 0.8
TOPIC_OVERLAP = 0.3
"""And the two share this much of their terms (Dice): a long decision that happens to hold most
of a short one's words is not about the same choice."""
_NARRATION = regex.compile(
    r"(?i)^\W*(?:let\s+me|let's|i'll|i\s+will|i'm|i\s+am|i've|i\s+have\s+now|now,?\s+(?:i|let|we)\b|okay\b|ok\b[,.!]|"
    r"alright\b|great\b[,.!]|perfect\b[,.!]|sure\b[,.!]|done\b[,.!]|(?:first|next|then),?\s+i\b|i\s+(?:need|want)\s+to\b|"
    r"looking\s+at\b|checking\b|h+m+\b|u+[hm]+\b)"
    r"|\blet's\s+(?:try|see|check|look|run|start|open|search|find|use)\b")
_JOINING_START = regex.compile(r"(?i)^\W*(?:and|or|but|then|so|which|that|because|while|with|also)\b")
_REFERS_BACK = regex.compile(r"(?i)^\W*(?:this|that|these|those|they)\s+(?:is|was|are|were|must|should|will|would|can|"
                             r"could|has|have|had|does|did|needs?|means?)\b")
_DANGLING_END = regex.compile(r"(?i)(?:\b(?:the|a|an|and|or|but|to|of|with|for|in|on|by|at|from|is|are|was|that|"
                              r"which)|[,:;(\[{/\\-]|…|\.\.\.)\s*$")
_WORD = regex.compile(r"[\p{L}\p{N}_]+")
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")
_GENERIC_ERROR = regex.compile(
    r"(?i)command not found|not found: \S+$|no such file or directory|permission denied|operation not permitted|"
    r"no module named|modulenotfounderror|cannot find module|connection refused|could not resolve host|"
    r"temporary failure in name resolution|externally-managed-environment|is not recognized as an internal or external"
    r"|cannot connect to the docker daemon|killed|out of memory|no space left on device|network is unreachable")
_AGENT_ERROR = regex.compile(
    r"(?i)<tool_use_error>|inputvalidationerror|has not been read yet|matches of the string to replace"
    r"|could not find oldstring|string to replace not found|^\W*exit code:? \d+\W*$")
_ENV_FIX = regex.compile(
    r"(?i)\b(?:apt(?:-get)?|brew|dnf|yum|apk|pacman|choco|winget)\s+install|\bpip3?\s+install|\bnpm\s+(?:i|install)\b"
    r"|\b(?:chmod|chown|sudo)\b|export\s+PATH|\bsource\s+\S*activate|\brestart(?:ed)?\b|\bretr(?:y|ied)\b")
_GOTCHA = regex.compile(r"^`?(?P<error>.*?)`?\s*→\s*(?:fixed by\s+(?P<fix>.*)|not fixed yet)$", regex.S)
_HOME_PATH = regex.compile(r"(?<![\w.~])(?:/(?:Users|home)/[^/\s`'\"]+(?:/[^\s`'\"]*)?|[A-Za-z]:[\\/][^\s`'\"]*)")
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))


def flaw(text: str, kind: str, root: Path | None = None, home: Path | None = None) -> str | None:
    """Why `text` (an entry of type `kind` offered by a checkpoint) is not a memory; None if it is.
    `root`: the project's folder; `home`: this user's home (paths under either are this machine's)."""
    if _NARRATION.search(text.replace("\u2019", "'")):
        return "narration"
    gotcha = _GOTCHA.match(text) if kind == "gotcha" else None
    if gotcha and _AGENT_ERROR.search(gotcha.group("error")):
        return "an error of the agent's own tools"
    if gotcha and _GENERIC_ERROR.search(gotcha.group("error")) and (
            gotcha.group("fix") is None or _ENV_FIX.search(gotcha.group("fix"))):
        return "an error any machine gives, fixed by setting up the machine"
    why = _fragment(text if gotcha is None else gotcha.group("error"))
    if why:
        return why
    for found in _HOME_PATH.findall(text):
        if not any(_under(found, mine) for mine in (root, home) if mine is not None):
            return f"another machine's path ({found})"
    return None


def _fragment(text: str) -> str | None:
    words = _WORD.findall(text)
    if len(words) < 3 and len(_CJK.findall(text)) < 6:
        return "a fragment (under three words)"
    if _JOINING_START.search(text) or _DANGLING_END.search(text):
        return "a fragment (cut mid-sentence)"
    if _REFERS_BACK.search(text):
        return "a fragment (what it speaks of is elsewhere)"
    if text.count("`") % 2 or any(text.count(a) != text.count(b) for a, b in _PAIRS):
        return "a fragment (unbalanced quotes or brackets)"
    return None


def _under(path: str, folder: Path) -> bool:
    mine = str(folder).rstrip("/\\")
    return path == mine or path.startswith((mine + "/", mine + "\\"))


_REPLACES = regex.compile(
    r"(?i)(?:\binstead\s+of|\brather\s+than|\bno\s+longer\s+(?:use[sd]?|using|need|needs)?|\bnot\s+anymore"
    r"|\breplac(?:e|es|ing)\b(?!\s+(?:it|them|this|that)\b)|\breplaced\b(?!\s+(?:by|with)\b)"
    r"|\b(?:switch|migrat|mov|chang|port)\w*\b[^.;,]{0,60}?\bfrom|\bdeprecat(?:e|ed|es|ing)|\bsupersed(?:e|ed|es|ing)"
    r"|\bdrop(?:ped|s)?\b|\bremov(?:e|ed|es)\b)"
    r"|不再(?:使用|用|采用)?|而不是|而非|取代|替换(?:掉)?|弃用|代替|废弃")
_CLAUSE_END = regex.compile(r"[.,;:!?。，；：！？()\[\]]|\s(?:with|for|as|in|on|to|by|because|since|so)\s|→")
_SUBJECT = "\0"  # marks a subject key (see probe)
_SENTENCE_END = regex.compile(r"[.;!?。；！？]")
_FILLER = frozenset({"us", "use", "using", "the", "our", "it", "its", "all", "now", "one", "过", "了"})


@dataclass(frozen=True)
class Replacement:
    """The terms a decision names as the choice it replaces (empty: it replaces nothing)."""

    named: frozenset[str]
    clauses: frozenset[str]  # every term of the clauses that name it
    subject: frozenset[str]  # the terms after those clauses, to the sentence's end ("… for the billing service")

    @classmethod
    def of(cls, text: str, tokens: Callable[[str], list[str]]) -> Replacement:
        named, clauses, subject = set(), set(), set()
        for phrase in _REPLACES.finditer(text):
            rest = text[phrase.end(): phrase.end() + 80]
            end = _CLAUSE_END.search(rest)
            clause = _content(tokens(rest[: end.start() if end else len(rest)]))
            if clause:
                named.add(clause[0])
                clauses.update(clause)
                if end is not None:
                    after = text[phrase.end() + end.start():]
                    stop = _SENTENCE_END.search(after, 1)
                    subject.update(_content(tokens(after[: stop.start() if stop else len(after)])))
        return cls(frozenset(named), frozenset(clauses), frozenset(subject - clauses))

    def replaces(self, newer_terms: frozenset[str], older_terms: frozenset[str]) -> bool:
        """Whether the decision with `newer_terms` (and this replacement) replaces the older one:
        it names one of the older's terms as replaced, the two share TOPIC_OVERLAP of their terms,
        and it either holds more than COVERAGE of the older's other terms or says it about a
        subject all of whose terms the older has."""
        if not self.named & older_terms or overlap(newer_terms, older_terms) < TOPIC_OVERLAP:
            return False
        rest = older_terms - self.clauses - _FILLER
        if not rest or len(rest & newer_terms) > COVERAGE * len(rest):
            return True
        return bool(self.subject) and self.subject <= older_terms


    def keys(self, terms: frozenset[str], rarity: Callable[[str], tuple]) -> list[tuple[str, str]]:
        """Index keys of the decision with `terms` and this replacement (see `probe`)."""
        out = [(named, term) for named in self.named for term in terms]
        if self.subject:
            rarest = min(self.subject, key=rarity)
            out += [(named, _SUBJECT + rarest) for named in self.named]
        return out


def probe(older_terms: frozenset[str], named: str, rarity: Callable[[str], tuple]) -> list[tuple[str, str]]:
    """Keys (see `Replacement.keys`) under one of which every decision naming `named` that
    replaces the older decision with `older_terms` is indexed: it holds more than COVERAGE of the
    older's terms S (filler aside; its clause terms are its own terms, so this follows from the
    rule in `replaces`), so besides `named` it holds one of S's rarest |S| - m + 1 other terms,
    m the fewest it must hold; or its subject is in the older, its rarest subject term too."""
    others = sorted((t for t in older_terms if t != named and t not in _FILLER), key=rarity)
    need = math.floor(COVERAGE * len(others) - (1 - COVERAGE)) + 1  # > COVERAGE * (len(others) + 1) - 1
    shared = others[: len(others) - need + 1] if need > 0 else [named, *others]
    return [(named, t) for t in shared] + [(named, _SUBJECT + t) for t in older_terms]


def _content(terms: list[str]) -> list[str]:
    return [t for t in terms if t not in _FILLER and not (len(t) == 1 and _CJK.match(t))]
