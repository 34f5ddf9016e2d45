"""A tool call as a normalised step, the unit `memory.distill` mines: the same routine gives the
same steps in every session, whatever the paths, files and arguments of the day.

Must hold: deterministic; a shell command is each of its simple commands (`compress.vocab.shell.
command_words`: wrappers, `VAR=value` and `cd` left out) as its program and, for programs that
have sub-commands, the sub-command (`git commit -m "x"` -> `git commit`, `npm run build` ->
`npm run build`, `python -m pytest tests/x.py` -> `python -m pytest`, `./gradlew test` ->
`gradlew test`, `bash ~/bin/release.sh v2` -> `bash release.sh`); programs that only decorate or
page output (`head`, `grep` in a pipeline, `echo`) and shell keywords are dropped; a call that
changes a file (edit, write, patch tools or `apply_patch`) is `(edit)`; other tools (reads,
searches, web) give no step. The body of a heredoc (`python - <<'EOF' … EOF`) is data, never
steps; PowerShell reads as a shell does (`powershell -Command "…"` is its commands, `Get-*`,
`Select-*`, `Write-*` cmdlets only read or print, `Remove-Item -Recurse` is `rm -rf`). A step
that cannot be undone keeps the flag that makes it so (`rm -rf`, `git push --force`,
`git reset --hard`, `git clean -f`, `git branch -D`), so it never merges with its harmless form.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

EDIT_STEP = "(edit)"
_SUBCOMMANDS = frozenset({
    "git", "npm", "yarn", "pnpm", "bun", "npx", "bunx", "cargo", "go", "docker", "docker-compose", "kubectl", "make",
    "uv", "poetry", "pip", "pip3", "gh", "dotnet", "mvn", "gradle", "gradlew", "mvnw", "rails", "bundle", "mix",
    "alembic", "terraform", "helm", "brew", "conda", "deno", "just", "tox", "nox", "hatch", "pdm", "rake", "composer",
    "php", "flutter", "dart", "swift", "rustup", "nx", "turbo", "lerna", "prisma", "django-admin", "manage.py",
    "supabase", "firebase", "vercel", "wrangler", "heroku", "aws", "gcloud", "az", "pre-commit", "ruff", "hugo",
    "zig", "stack", "cabal", "opam", "dune", "sbt", "lein", "elixir", "expo", "ng", "vite", "jest", "vitest",
})
"""Programs whose first plain argument names what they do (a sub-command, a script, a target)."""
_RUNNERS = frozenset({"run", "exec", "x", "dlx"})
"""Sub-commands that name a script or tool next (`npm run build`, `pnpm exec tsc`, `uv run pytest`)."""
_NOISE = frozenset({
    "head", "tail", "grep", "egrep", "rg", "sort", "uniq", "wc", "tee", "cut", "jq", "awk", "xargs", "tr", "column",
    "less", "more", "echo", "printf", "true", "false", "sleep", "pwd", "which", "clear", "cat", "ls", "sed", "set",
    "export", "source", ".", "exit", "date", "nl", "read", "test", "[", "[[", "time", "timeout", "fi", "done", "esac",
    "for", "case", "function", "}", "local", "return",
})
"""Programs that decorate, page or only print, and shell words that close or declare: no part of a
routine on their own."""
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{"})
"""Shell words a command may follow (`then make test`): dropped from its front."""
_PLAIN = re.compile(r"^[a-z][a-z0-9_:-]{0,30}$")
_PYTHON = re.compile(r"^python[0-9.]*$")
_SHELLS = frozenset({"bash", "sh", "zsh"})
_SCRIPT_FLAG = re.compile(r"^-[a-z]*c[a-z]*$")
_SCRIPT_RUNNERS = _SHELLS | {"node", "python", "python3", "ruby", "perl", "deno", "bun", "tsx", "ts-node"}
_SCRIPT = re.compile(r"\.(?:sh|bash|js|mjs|cjs|ts|py|rb|pl)$")
"""A script a shell or interpreter runs is named by its file name (`bash ~/x/export.sh .` -> `bash export.sh`)."""
_PROGRAM = re.compile(r"^\w[\w.+-]{0,39}$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w-]*)\1")
_POWERSHELL = frozenset({"powershell", "powershell.exe", "pwsh", "pwsh.exe"})
_PS_READS = re.compile(r"^(get|select|write|test|out|format|measure|sort|where|foreach|resolve|join|split|"
                       r"convertto|convertfrom|start-sleep)-?")
_PS_STEPS = {"remove-item": "rm", "copy-item": "cp", "move-item": "mv", "new-item": "mkdir", "set-location": "",
             "push-location": "", "pop-location": "", "invoke-webrequest": "curl", "invoke-restmethod": "curl"}
# (program, sub-command) -> (flags that make it irreversible, the step it becomes)
_IRREVERSIBLE_FLAGS: dict[tuple[str, str], tuple[set[str], str]] = {
    ("git", "push"): ({"-f", "--force", "--force-with-lease", "--mirror", "--delete", "-d"}, "git push --force"),
    ("git", "reset"): ({"--hard"}, "git reset --hard"),
    ("git", "clean"): ({"-f", "-fd", "-fdx", "-df", "-xdf", "-dfx", "--force"}, "git clean -f"),
    ("git", "branch"): ({"-D"}, "git branch -D"),
}


def without_heredocs(command: str) -> str:
    """`command` without the bodies of its heredocs (the line that opens one is kept)."""
    if "<<" not in command:
        return command
    out: list[str] = []
    ending: list[str] = []
    for line in command.split("\n"):
        if ending:
            if line.strip() == ending[0]:
                ending.pop(0)
            continue
        out.append(line)
        ending = [m.group(2) for m in _HEREDOC.finditer(line) if "<<<" not in line[max(0, m.start() - 1):m.end()]]
    return "\n".join(out)


def _special(program: str, words: list[str], depth: int) -> list[str] | None:
    """The steps of PowerShell, `rm` and irreversible git forms; None for any other command."""
    if program in _POWERSHELL:
        script = next((w for i, w in enumerate(words[1:-1], 1) if w.lower() in ("-command", "-c")), None)
        return command_steps(words[words.index(script) + 1], depth + 1) if script and depth < 2 else []
    if "-" in program and program.split("-")[0].isalpha():
        if _PS_READS.match(program):
            return []
        mapped = _PS_STEPS.get(program, program)
        if mapped == "rm" and {"-recurse", "-force", "-r"} & {w.lower() for w in words[1:]}:
            return ["rm -rf"]
        return [mapped] if mapped else []
    if program == "rm":
        short = "".join(w[1:] for w in words[1:] if w.startswith("-") and not w.startswith("--"))
        forced = "r" in short.lower() or "f" in short or {"--recursive", "--force"} & set(words)
        return ["rm -rf"] if forced else ["rm"]
    args = [w for w in words[1:] if not w.startswith("-")]
    flags, step = _IRREVERSIBLE_FLAGS.get((program, args[0] if args else ""), (set(), ""))
    if step and (flags & set(words[2:]) or any(a.startswith("+") for a in args[1:])):
        return [step]
    return None


def command_steps(command: str, depth: int = 0) -> list[str]:
    """The steps of one shell command line (empty when it is unreadable or only noise)."""
    from compress.vocab.commands import command_words
    from compress.vocab.tools import PATCH_TOOLS

    out: list[str] = []
    for words in command_words(without_heredocs(command)):
        while len(words) > 1 and words[0] in _KEYWORDS:
            words = words[1:]
        program = words[0].removeprefix("./")
        special = _special(program, words, depth)
        if special is not None:
            out += special
            continue
        if program in _SHELLS and len(words) >= 3 and _SCRIPT_FLAG.match(words[-2]) and depth < 2:
            out += command_steps(words[-1], depth + 1)  # bash -lc 'SCRIPT' (command_words reads only -c)
            continue
        if program in PATCH_TOOLS:
            out.append(EDIT_STEP)
            continue
        if program in _NOISE or program in _KEYWORDS or not _PROGRAM.match(program):
            continue
        args = [w for w in words[1:] if not w.startswith("-")]
        if (program in _SCRIPT_RUNNERS and args and _SCRIPT.search(args[0]) and words[1:2] != ["-m"]
                and not args[0].endswith("manage.py")):
            out.append(f"{'python' if _PYTHON.match(program) else program} {posixpath.basename(args[0])}")
            continue
        if _PYTHON.match(program):
            program = "python"
            if words[1:2] == ["-m"] and len(words) > 2:
                out.append(f"python -m {words[2]}")
                continue
            if args and args[0].endswith("manage.py") and len(args) > 1 and _PLAIN.match(args[1]):
                out.append(f"python manage.py {args[1]}")
                continue
        if program in _SUBCOMMANDS and args and _PLAIN.match(args[0]):
            step = f"{program} {args[0]}"
            if args[0] in _RUNNERS and len(args) > 1 and _PLAIN.match(args[1]):
                step += f" {args[1]}"
            out.append(step)
        else:
            out.append(program)
    return out


def call_steps(name: str, tool_input: Any) -> list[str]:
    """The steps of one tool call (a shell call: its commands; a file change: `(edit)`)."""
    from compress.vocab.tools import PATCH_TOOLS, ToolKind, base_name, command_of, file_tool_action, tool_kind
    from compress.vocab.touches import CHANGES

    base = base_name(name)
    if tool_kind(name) is ToolKind.COMMAND:
        return command_steps(command_of(tool_input))
    if base in PATCH_TOOLS:
        return [EDIT_STEP]
    if isinstance(tool_input, dict) and file_tool_action(base, tool_input) in CHANGES:
        return [EDIT_STEP]
    return []
