"""Claude Code hook handlers: hook input (a dict from stdin JSON) -> hook output (a dict or None).

Protocol (Claude Code hooks): every event gets `session_id`, `transcript_path`, `cwd` and
`hook_event_name`; SessionStart adds `source` (startup/resume/clear/compact), UserPromptSubmit
`prompt`, PreCompact `trigger`, SessionEnd `reason`, PreToolUse `tool_name` and `tool_input`.
Output, for exit code 0, is JSON on stdout; SessionStart and UserPromptSubmit inject text with
`{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}}`; PreToolUse (only
for the tools in `GUARDED_TOOLS`) denies a call whose input holds a ctxmill marker or note with
`{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
"permissionDecisionReason": WHY}}`: a model that copied a placeholder (a keyed marker or note,
a keyless cut notice, a reminder) would write it into a file.
The other events print nothing (a Stop hook that printed `decision: block` would keep the agent
running).

Handlers import engines lazily: UserPromptSubmit starts a process per prompt.
"""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a hook's process does not import typing for this
if TYPE_CHECKING:
    from memory.config import MemoryConfig

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PreCompact", "SessionEnd", "Stop")
GUARDED_TOOLS = "Write|Edit|MultiEdit|NotebookEdit|Bash"
"""The PreToolUse matcher: tools whose input ends up in files or runs as a command."""
PROMPT_BUDGET_TOKENS = 300  # memory injected per prompt at most
PROMPT_MIN_COVERAGE = 0.34  # share of the prompt's distinct search terms a hit must contain
PROMPT_MIN_TERMS = 2  # and at least this many of them (or all, for shorter prompts)
PROMPT_RELATIVE = 0.5  # and at least this fraction of the best hit's score
CURRENT_FILE = "current.json"
TIDIED_FILE = ".tidied"
"""In a project home: its mtime is when SessionStart last consolidated the home (`after_session_start`)."""
TIDY_EVERY_S = 3600.0
"""SessionStart consolidates a project home at most once in this many seconds: a session start
with nothing due forks no process (consolidating takes about as much CPU as the hook itself,
on a machine the host and its next hooks share). Dreams are due after days and old sessions expire after days:
an hour's delay changes neither."""
TOOLS_HINT = (
    "ctxmill is active: markers like [ctxmill: … · deep_expand(\"KEY\")] name cut originals; "
    "call the `deep_expand` MCP tool (or `ctxmill expand KEY`) to read them. `memory_search` / "
    "`memory_store` reach project memory; `history_search` / `history_get` find what earlier sessions said; "
    "`/checkpoint` saves progress, `/dream` consolidates memory."
)


def project_home(event: dict) -> Path:
    """The project home of the event's `cwd` (CTXMILL_HOME, when set, wins: see ctxmill.paths)."""
    from ctxmill.paths import project_home as home_of

    cwd = event.get("cwd")
    return home_of(Path(cwd) if isinstance(cwd, str) and cwd else None)


def _inject(event_name: str, text: str) -> dict | None:
    if not text.strip():
        return None
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def remember_session(home: Path, event: dict) -> None:
    """Record the live session's transcript so `ctxmill checkpoint` and the MCP tool can find it:
    compact JSON through the stdlib, which the hook's process has loaded already (orjson and what
    it loads, uuid and platform, cost a quick hook a few ms); not synced (an fsync costs a new
    session's first hook several ms, and a record lost in a crash is written by the next prompt)."""
    import json

    record = {k: event.get(k) for k in ("session_id", "transcript_path", "cwd") if isinstance(event.get(k), str)}
    if not record.get("transcript_path"):
        return
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    if _session_record(home) == data:
        return
    from ground.files import atomic_write

    atomic_write(home / "sessions" / CURRENT_FILE, data, fsync=False)


def _session_record(home: Path) -> bytes | None:
    """`<home>/sessions/current.json` read bounded (`ground.home_files`), None when it cannot be."""
    from ground.home_files import RECORD_BYTES, read_home_file

    try:
        return read_home_file(home, Path("sessions") / CURRENT_FILE, RECORD_BYTES)
    except OSError:
        return None


def current_session(home: Path) -> dict | None:
    import json

    try:
        record = json.loads(_session_record(home) or b"null")
    except ValueError:  # not JSON, or not UTF-8
        return None
    return record if isinstance(record, dict) and isinstance(record.get("transcript_path"), str) else None


def session_start(event: dict) -> dict | None:
    """The tools hint, project memory within its budget (pinned entries always: memory.inject)
    and the last checkpoint's summary (its own budget: memory.summary)."""
    from ctxmill.settings import Settings
    from memory.inject import select
    from memory.summary import latest_summary

    home = project_home(event)
    if home.is_dir():
        remember_session(home, event)
    cfg = Settings.load(home).memory
    parts = [TOOLS_HINT]
    memory = select(cfg)
    if memory.lines:
        more = f"; {memory.left_out} more entries: memory_search finds them" if memory.left_out else ""
        parts.append(f"Project memory (ctxmill{more}):\n" + "\n".join(memory.lines))
    summary = latest_summary(home)
    if summary:
        parts.append("Last ctxmill checkpoint (full text: .ctxmill/checkpoint.md):\n" + summary)
    return _inject("SessionStart", "\n\n".join(parts))


def consolidation_due(event: dict, now: float | None = None) -> bool:
    """Whether SessionStart should start `after_session_start`: the event's project home exists
    (without one there is nothing to consolidate) and was last consolidated TIDY_EVERY_S ago or
    more, or never, or at a time still to come (a clock set back). One stat, no import; a stamp
    that is not a regular file (a link a repository shipped) counts as none (consolidation
    replaces it with a file)."""
    import os
    import stat
    import time

    home = project_home(event)
    try:
        found = os.lstat(home / TIDIED_FILE)
    except FileNotFoundError:
        return home.is_dir()
    except OSError:
        return False
    age = (time.time() if now is None else now) - found.st_mtime
    return not (stat.S_ISREG(found.st_mode) and 0 <= age < TIDY_EVERY_S)


def after_session_start(event: dict) -> None:
    """Consolidate memory when due, delete old session state and give the project home its
    .gitignore (runs after the answer is written: never delays injection). The home's
    TIDIED_FILE is written first: a run that fails midway is not retried at every start."""
    from compress.state.session import prune_sessions
    from ctxmill.paths import ensure_gitignore, sessions_dir
    from ctxmill.settings import Settings
    from ground.files import atomic_write
    from memory.dream import DreamRefused, maybe_dream
    from memory.summary import CHECKPOINT_FILE

    home = project_home(event)
    if home.is_dir():
        atomic_write(home / TIDIED_FILE, b"", fsync=False)  # a stamp: its time is what counts
        prune_sessions(sessions_dir(home), keep=(CHECKPOINT_FILE,))
        ensure_gitignore(home)
    try:
        maybe_dream(Settings.load(home).memory)
    except DreamRefused:
        pass  # recorded in .schedule.json; `ctxmill dream` shows why


def relevant(prompt_terms: set[str], entry_terms: set[str]) -> bool:
    """Whether a memory hit is worth injecting, independent of the memory's size (BM25 scores
    are not comparable across corpora): it must share enough of the prompt's search terms."""
    shared = len(prompt_terms & entry_terms)
    needed = min(PROMPT_MIN_TERMS, len(prompt_terms))
    return shared >= needed and shared >= PROMPT_MIN_COVERAGE * len(prompt_terms)


def is_slash_command(prompt: str) -> bool:
    """A client command (`/compact`, `/ctxmill:checkpoint now`), not a prompt that starts with an
    absolute path (`/home/me/app/main.py fails`): one slash, then a name, then a space or the
    end."""
    head = prompt.lstrip().split(maxsplit=1)[0] if prompt.strip() else ""
    return head.startswith("/") and "/" not in head[1:] and "." not in head


def user_prompt_submit(event: dict) -> dict | None:
    """The prompt's context: relevant project memory, then the repository map (`ctxmill.prompt_map`)."""
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip() or is_slash_command(prompt):
        return None
    from ctxmill.prompt_map import prompt_map
    from ctxmill.settings import Settings

    home = project_home(event)
    settings = Settings.load(home)
    if home.is_dir():
        remember_session(home, event)
    parts = [_memory_hits(settings.memory, prompt), prompt_map(event, prompt, settings)]
    return _inject("UserPromptSubmit", "\n\n".join(p for p in parts if p))


def _memory_hits(cfg: MemoryConfig, prompt: str) -> str:
    from compress.token_counters import estimate_tokens
    from memory import api

    hits = api.search(cfg, prompt, limit=5)
    if not hits:
        return ""
    tokenize = api.tokenizer(cfg).tokens
    terms = set(tokenize(prompt))
    lines, injected, used = [], [], 0
    for hit in hits:
        if hit.score < PROMPT_RELATIVE * hits[0].score:
            break
        if not relevant(terms, set(tokenize(hit.entry.text))):
            continue
        line = f"- [{hit.entry.type} {hit.entry.id}] {hit.snippet}"
        cost = estimate_tokens(line)
        if used + cost > PROMPT_BUDGET_TOKENS:
            break
        lines.append(line)
        injected.append(hit.entry.id)
        used += cost
    if not lines:
        return ""
    from memory import usage

    usage.record(cfg, injected, _today())  # found useful: ranks them for session start (memory.inject)
    return "Relevant project memory (ctxmill):\n" + "\n".join(lines)


def _today() -> str:
    from datetime import date

    return date.today().isoformat()


def checkpoint_now(event: dict, only_if_changed: bool = False) -> None:
    """Checkpoint the event's transcript (PreCompact, SessionEnd, Stop)."""
    transcript = event.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        raise ValueError("hook input has no transcript_path")
    from ctxmill.paths import ensure_gitignore

    home = project_home(event)
    ensure_gitignore(home)  # a fresh repository's first checkpoint creates the home
    remember_session(home, event)
    from ctxmill.settings import Settings
    from memory.checkpoint import checkpoint_file, session_id_for

    session_id = session_id_for(transcript, event.get("session_id"))
    if only_if_changed and _unchanged_since_checkpoint(home, session_id, Path(transcript)):
        return
    checkpoint_file(Settings.load(home).checkpoint, transcript, session_id)


def _unchanged_since_checkpoint(home: Path, session_id: str, transcript: Path) -> bool:
    from memory.summary import CHECKPOINT_FILE

    done = home / "sessions" / session_id / CHECKPOINT_FILE
    try:
        return done.stat().st_mtime >= transcript.stat().st_mtime
    except OSError:
        return False


def ingest_event(event: dict, home: Path) -> None:
    """Keep the event's transcript in history (PreCompact, SessionEnd): only its new messages.
    `home`: the event's project home (its config.toml may turn history off)."""
    from ctxmill.settings import Settings
    from memory.history.ingest import ingest_file

    transcript = event.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return
    cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else ""
    session = event.get("session_id") if isinstance(event.get("session_id"), str) else None
    ingest_file(Settings.load(home).history, transcript, cwd or str(home.parent), key=session)


def pre_tool_use(event: dict) -> dict | None:
    """Deny a call whose input carries a ctxmill placeholder: a marker or note (keyed), a cut
    notice such as `[ctxmill: 45 lines omitted]` (`ccr.markers.find_placeholders`) or a
    reminder (`compress.stages.nudges.reminders`). Each stands for text ctxmill cut, or speaks
    to the model; written to a file or run as a command it would replace real content."""
    from ground.jsonvalues import strings_in

    named = event.get("tool_name")
    tool = named if isinstance(named, str) else "tool"
    for text in strings_in(event.get("tool_input")):
        if "ctxmill: " in text and (reason := _placeholder_reason(text, tool)):
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                           "permissionDecisionReason": reason}}
    return None


def _placeholder_reason(text: str, tool: str) -> str | None:
    from ccr.markers import find_placeholders

    found = find_placeholders(text)
    keyed = next((m for m in found if m.key), None)
    if keyed is not None:
        return (f"ctxmill: this {tool} input contains a ctxmill placeholder (deep_expand(\"{keyed.key}\")). It stands "
                f"for text ctxmill stored, not for content: call deep_expand(\"{keyed.key}\") or read the file to "
                "get the real text, then retry with it.")
    if found:
        shown = text[found[0].start:found[0].end][:200]
        return (f"ctxmill: this {tool} input contains a ctxmill cut notice ({shown}). It stands for text ctxmill "
                "cut from what you read, not for content: read the file again (or call deep_expand on the "
                "marker that came with the cut) and retry with the real text.")
    from compress.stages.nudges import reminders

    if any(reminder in text for reminder in reminders()):
        return (f"ctxmill: this {tool} input contains a ctxmill reminder ([ctxmill: …]), which is addressed to you, "
                "not content: leave it out and retry.")
    return None


def handle(event_name: str, event: dict) -> dict | None:
    if event_name == "PreToolUse":
        return pre_tool_use(event)
    if event_name == "SessionStart":
        return session_start(event)
    if event_name == "UserPromptSubmit":
        return user_prompt_submit(event)
    if event_name in ("PreCompact", "SessionEnd"):
        try:
            checkpoint_now(event)
        finally:
            ingest_event(event, project_home(event))  # the session's new messages into history (`[history] enabled`)
        return None
    if event_name == "Stop":
        checkpoint_now(event, only_if_changed=True)
        return None
    raise ValueError(f"unknown hook event {event_name!r}")
