"""A distilled candidate (`memory.distill`) as a skill file, and what a step risks.

`render(candidate)` is a SKILL.md (YAML front matter `name` / `description`, the format Claude
Code and OpenCode both read) carrying `MARK`. Must hold:
- a command from tool output is data: each is one line in a code span whose fence is longer
  than any run of backticks inside it (CommonMark), so no command closes its span and writes
  Markdown or instructions of its own into the skill;
- paths are the project's, not the session's: the session's project folder reads `<project>`,
  any other home folder `~` (`/Users/ann/…`, `/home/ann/…`, `C:\\Users\\ann\\…`);
- a step `risk` names (irreversible: `rm -rf`, force pushes, `reset --hard`, publishing, deleting
  infrastructure; or carrying a credential) is preceded by a warning line in the skill;
- `write(candidate, folder)` writes `<folder>/<name>/SKILL.md` unless a file there lacks `MARK`
  (a person's skill is never replaced).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from memory.history.steps import EDIT_STEP

MARK = (
    "<!-- written by ctxmill distill: ctxmill may rewrite this file while this line is here; "
    "delete the line to keep your edits -->"
)
IRREVERSIBLE = {
    "rm -rf": "deletes files for good",
    "git push --force": "rewrites the remote's history",
    "git reset --hard": "throws away uncommitted work",
    "git clean -f": "deletes untracked files",
    "git branch -D": "deletes a branch that may not be merged",
    "npm publish": "publishes a package",
    "yarn publish": "publishes a package",
    "pnpm publish": "publishes a package",
    "cargo publish": "publishes a crate",
    "twine upload": "publishes a package",
    "poetry publish": "publishes a package",
    "uv publish": "publishes a package",
    "gem push": "publishes a gem",
    "docker push": "publishes an image",
    "gh release": "publishes a release",
    "npm unpublish": "removes a published package",
    "terraform apply": "changes real infrastructure",
    "terraform destroy": "destroys real infrastructure",
    "kubectl delete": "deletes cluster resources",
    "helm uninstall": "removes a deployment",
    "dropdb": "deletes a database",
    "mkfs": "erases a disk",
    "dd": "writes raw to a device",
    "vercel deploy": "deploys to production",
    "firebase deploy": "deploys",
    "wrangler deploy": "deploys",
    "fly deploy": "deploys",
    "heroku apps": "changes a live app",
}
_CREDENTIAL = re.compile(
    r"\[REDACTED:|(?i:authorization:|bearer\s+\S|--password|--token\b|api[_-]?key\s*=|"
    r"password\s*=|secret\s*=|token\s*=)"
)
_HOME = re.compile(r"(?:/Users/|/home/)[^/\s\"'`]+|[A-Za-z]:[\\/]+Users[\\/]+[^\\/\s\"'`]+")


def risk(step: str, example: str = "") -> str:
    """Why `step` (run as `example`) cannot be undone or is sensitive, or ""."""
    if step in IRREVERSIBLE:
        return IRREVERSIBLE[step]
    if step.startswith("mkfs"):
        return IRREVERSIBLE["mkfs"]
    if example and _CREDENTIAL.search(example):
        return "carries a credential"
    return ""


def code(text: str) -> str:
    """`text` as one inline code span no backtick inside can close."""
    text = " ".join(text.split())
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or runs else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def portable(example: str, project: str | None = None) -> str:
    """`example` with the session's project folder as `<project>` and other homes as `~`."""
    if project:
        for form in {project, project.replace("\\", "/"), project.replace("/", "\\")}:
            example = example.replace(form.rstrip("/\\"), "<project>")
    return _HOME.sub("~", example)


def render(candidate, project: str | None = None) -> str:
    lines = [
        "---",
        f"name: {candidate.name}",
        f"description: {json.dumps(candidate.description, ensure_ascii=False)}",
        "---",
        MARK,
        "",
        "# " + " → ".join("edit" if s == EDIT_STEP else s for s in candidate.steps),
        "",
        f"A routine that came back in {candidate.tasks} tasks. Its steps, each with the command "
        "one of those sessions ran:",
        "",
    ]
    for i, (step, example, why) in enumerate(
        zip(candidate.steps, candidate.examples, candidate.risky, strict=True), 1
    ):
        if why:
            lines.append(
                f"{i}. **Warning: this step {why} and cannot be undone. Ask the person before running it.**"
            )
            lines.append("")
        if step == EDIT_STEP:
            lines.append(f"{i}. Change the files the previous step points at.")
            continue
        shown = portable(example, project)[:200]
        lines.append(
            f"{i}. {code(step)}"
            + (f" (for example: {code(shown)})" if shown and shown != step else "")
        )
    lines += [
        "",
        f"Found in {len(candidate.sessions)} sessions: "
        + ", ".join(candidate.sessions[:10])
        + (" …" if len(candidate.sessions) > 10 else ""),
        "",
        "ctxmill found this sequence by counting commands across sessions; check that it fits the task "
        "before following it.",
        "",
    ]
    return "\n".join(lines)


def write(candidate, folder: Path, project: str | None = None) -> tuple[Path, bool]:
    """Write the candidate's SKILL.md under `folder`; (path, written). Not written when a file
    there does not carry `MARK` (a skill a person wrote or took over)."""
    from ground.files import atomic_write

    path = folder / candidate.name / "SKILL.md"
    try:
        if MARK not in path.read_text("utf-8", errors="replace"):
            return path, False
    except FileNotFoundError:
        pass
    atomic_write(path, render(candidate, project).encode("utf-8"))
    return path, True
