"""Checkpoint extraction on real-shaped sessions: the person's request, statements not chatter,
errors and their fixes, files, next steps, and the Claude Code reader following a compaction."""

from __future__ import annotations

from pathlib import Path

import orjson

from compress.formats.requests import from_provider
from compress.formats.sessions import read_session
from compress.formats.sessions.transcript import Transcript
from memory import api
from memory.checkpoint import CheckpointConfig, write_checkpoint
from memory.config import MemoryConfig
from memory.dream import dream
from memory.extract import extract


def _use(i, name, inp):
    return {"type": "tool_use", "id": f"t{i}", "name": name, "input": inp}


def _result(i, text, err=False):
    return {"type": "tool_result", "tool_use_id": f"t{i}", "content": text, "is_error": err}


def _extract(msgs):
    return extract(from_provider({"messages": msgs}).messages)


def _section(md: str, name: str) -> str:
    return md.split(f"## {name}")[1].split("\n## ")[0]


def _checkpoint(tmp_path: Path, msgs) -> str:
    home = tmp_path / ".ctxmill"
    cfg = CheckpointConfig(MemoryConfig(home, tmp_path / "global"), home / "ccr")
    return write_checkpoint(cfg, Transcript(format="test", provider="anthropic", messages=msgs), "s", offer=False).markdown


NOTIFICATION = ("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"
                "<summary>Background command \"Run tests\" completed (exit code 0)</summary>\n</task-notification>\n"
                "Read the output file to retrieve the result: /tmp/tasks/b1.output")


def test_task_is_the_persons_request_not_host_messages():
    msgs = [
        {"role": "user", "content": "Work on bead spotter-dov, starting with the first ready task."},
        {"role": "assistant", "content": "Done with the first task."},
        {"role": "user", "content": "This session is being continued from a previous conversation that ran out of "
                                    "context. The summary below covers the earlier portion of the conversation."},
        {"role": "user", "content": "<command-name>/compact</command-name>\n<command-args>go on</command-args>"},
        {"role": "assistant", "content": "Continuing."},
        {"role": "user", "content": NOTIFICATION},
        {"role": "assistant", "content": "That was a stale background run."},
    ]
    ex = _extract(msgs)
    assert [s.text for s in ex.intents] == ["Work on bead spotter-dov, starting with the first ready task."]


def test_refused_call_is_not_an_error_fixed_by_the_next_command(tmp_path):
    msgs = [
        {"role": "user", "content": "Write the plan."},
        {"role": "assistant", "content": [_use(1, "Write", {"file_path": "/p/PLAN.md", "content": "x"})]},
        {"role": "user", "content": [_result(1, "The user doesn't want to proceed with this tool use. The tool use was "
                                                "rejected (eg. if it was a file edit, the new_string was NOT written to "
                                                "the file). The user provided the following reason for the rejection:  "
                                                "add a slug to the plan", True)]},
        {"role": "assistant", "content": [_use(2, "Bash", {"command": "npm run build"})]},
        {"role": "user", "content": [_result(2, "ok")]},
        {"role": "assistant", "content": "Built."},
    ]
    ex = _extract(msgs)
    assert not ex.gotchas and not ex.unresolved_errors
    assert ex.refusals and ex.refusals[0].reason == "add a slug to the plan"
    assert "/p/PLAN.md" not in ex.files  # the refused write changed nothing
    assert ex.intents[-1].text == "add a slug to the plan"
    md = _checkpoint(tmp_path, msgs)
    assert "fixed by" not in _section(md, "Errors → fixes")
    assert "Refused: Write /p/PLAN.md: add a slug to the plan" in _section(md, "Progress")


def test_answers_to_the_agents_questions_are_decisions():
    msgs = [
        {"role": "user", "content": "Commit it."},
        {"role": "assistant", "content": [_use(1, "AskUserQuestion", {"questions": [{"question": "Skip the hook?"}]})]},
        {"role": "user", "content": [_result(1, 'User has answered your questions: "Skip the hook?"="No, fix the '
                                                'pre-existing issues". You can now continue with the user\'s answers in mind.')]},
    ]
    assert [s.text for s in _extract(msgs).decisions] == ["No, fix the pre-existing issues (asked: Skip the hook?)"]


def test_decisions_are_statements_not_chatter():
    msgs = [
        {"role": "user", "content": "Fix the seeds."},
        {"role": "assistant", "content": "Let me verify this empirically rather than go from memory. "
                                         "I'd leave it as BigDecimal rather than a float cast. "
                                         "Want me to switch to Postgres instead of SQLite? "
                                         "I'll disable that default wrapper since the summary already shows the errors."},
        {"role": "user", "content": "那么就用 godot 吧。我希望是桌面游戏。不要直接开始写代码"},
        {"role": "assistant", "content": "让我查看一下当前目录而不是猜测。我没有改用新的密钥。我们改用 2D 等距来写。"},
    ]
    ex = _extract(msgs)
    decisions = [s.text for s in ex.decisions]
    assert decisions == ["I'd leave it as BigDecimal rather than a float cast.",
                         "I'll disable that default wrapper since the summary already shows the errors.",
                         "那么就用 godot 吧。", "我们改用 2D 等距来写。"]
    assert [s.text for s in ex.constraints] == ["我希望是桌面游戏。", "不要直接开始写代码"]


def test_fixes_are_related_changes_not_looks():
    msgs = [
        {"role": "user", "content": "Push it."},
        {"role": "assistant", "content": [_use(1, "Bash", {"command": "git push"})]},
        {"role": "user", "content": [_result(1, "Exit code 128\nfatal: The current branch x has no upstream branch.\n"
                                                "    git push --set-upstream origin x", True)]},
        {"role": "assistant", "content": [_use(2, "Bash", {"command": "git status"})]},
        {"role": "user", "content": [_result(2, "On branch x")]},
        {"role": "assistant", "content": [_use(3, "Bash", {"command": "git push --set-upstream origin x"})]},
        {"role": "user", "content": [_result(3, "done")]},
        {"role": "assistant", "content": [_use(4, "Bash", {"command": "mix test test/a_test.exs"})]},
        {"role": "user", "content": [_result(4, "Exit code 2\n  1) test a (ATest)\n     test/a_test.exs:4\n"
                                                "     ** (RuntimeError) Phoenix LiveView requires lazy_html as a test "
                                                "dependency.\n     Please add to your mix.exs\n\n5 tests, 5 failures", True)]},
        {"role": "assistant", "content": [_use(5, "Edit", {"file_path": "/p/mix.exs", "old_string": "a", "new_string": "b"})]},
        {"role": "user", "content": [_result(5, "ok")]},
        {"role": "assistant", "content": [_use(6, "Bash", {"command": "mix test test/a_test.exs"})]},
        {"role": "user", "content": [_result(6, "5 tests, 0 failures")]},
    ]
    ex = _extract(msgs)
    assert [(g.error, g.fix) for g in ex.gotchas] == [
        ("fatal: The current branch x has no upstream branch.", "Bash: git push --set-upstream origin x"),
        ("** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency.", "Edit /p/mix.exs"),
    ]


def test_an_error_nothing_related_fixed_stays_unresolved():
    msgs = [
        {"role": "user", "content": "Check the JS."},
        {"role": "assistant", "content": [_use(1, "Bash", {"command": "node --check app.js"})]},
        {"role": "user", "content": [_result(1, "Exit code 127\n/bin/bash: line 1: node: command not found", True)]},
        {"role": "assistant", "content": [_use(2, "Bash", {"command": "bin/rails server -d"})]},
        {"role": "user", "content": [_result(2, "started")]},
        {"role": "assistant", "content": [_use(3, "Bash", {"command": "rm -f tmp/pids/server.pid"})]},
        {"role": "user", "content": [_result(3, "")]},
    ]
    ex = _extract(msgs)
    assert not ex.gotchas and [g.error for g in ex.unresolved_errors] == ["/bin/bash: line 1: node: command not found"]


def test_literal_newlines_in_an_error_are_line_breaks(tmp_path):
    failure = "Pre-commit validation failed:\\n\\n[FORMAT] Code is not formatted.\\nRun 'mix format' to fix.\\n"
    msgs = [
        {"role": "user", "content": "Commit."},
        {"role": "assistant", "content": [_use(1, "Bash", {"command": "git commit -m x"})]},
        {"role": "user", "content": [_result(1, failure, True)]},
        {"role": "assistant", "content": [_use(2, "Bash", {"command": "mix format"})]},
        {"role": "user", "content": [_result(2, "")]},
        {"role": "assistant", "content": [_use(3, "Bash", {"command": "git commit -m x"})]},
        {"role": "user", "content": [_result(3, "[main 1a2b] x")]},
    ]
    ex = _extract(msgs)
    assert [(g.error, g.fix) for g in ex.gotchas] == [
        ("Pre-commit validation failed: [FORMAT] Code is not formatted.", "Bash: mix format")]


def test_failed_edits_and_scratch_files_are_not_files_changed():
    msgs = [
        {"role": "user", "content": "Edit the config."},
        {"role": "assistant", "content": [_use(1, "apply_patch", {"patchText": "*** Begin Patch\n*** Update File: "
                                                                             "/home/u/.ssh/config\n@@\n-a\n+b\n*** End Patch"}),
                                          _use(2, "Bash", {"command": "curl -s localhost > /tmp/smoke.log; echo x 2>$null"}),
                                          _use(3, "Write", {"file_path": "/p/app.py", "content": "x"})]},
        {"role": "user", "content": [_result(1, "apply_patch verification failed: Error: Failed to find expected lines", True),
                                     _result(2, ""), _result(3, "ok")]},
    ]
    assert list(_extract(msgs).files) == ["/p/app.py"]


def test_next_steps_from_the_last_reply_and_an_unfinished_request(tmp_path):
    done = [
        {"role": "user", "content": "Ship FW-005."},
        {"role": "assistant", "content": "Both commits landed.\n\nIf you agree, the follow-up I'd run:\n\n"
                                         "1. Update SUBMISSION.md.\n2. Mark FW-007 done in issues.md.\n\nAnything else?"},
    ]
    steps = _section(_checkpoint(tmp_path, done), "Next steps")
    assert "- Update SUBMISSION.md." in steps and "- Mark FW-007 done in issues.md." in steps
    assert "follow-up I'd run:" not in steps
    working = done + [
        {"role": "user", "content": "Export a transcript of this chat."},
        {"role": "assistant", "content": [{"type": "text", "text": "Copying it."},
                                          _use(1, "Bash", {"command": "cp a.md b.md"})]},
        {"role": "user", "content": [_result(1, "")]},
    ]
    steps = _section(_checkpoint(tmp_path / "2", working), "Next steps")
    assert steps.strip().splitlines()[0] == "- [ ] Unfinished, the latest request: Export a transcript of this chat."


def _cc_line(uuid, parent, kind, content, **extra):
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(model="m", id=f"msg-{uuid}")
    return {"uuid": uuid, "parentUuid": parent, "sessionId": "s", "type": kind, "message": message, **extra}


def test_claude_code_reader_follows_a_compaction_whose_logical_parent_is_missing(tmp_path):
    lines = [
        _cc_line("u1", None, "user", "Work on bead spotter-dov."),
        _cc_line("a1", "u1", "assistant", [_use(1, "Write", {"file_path": "/p/early.ex", "content": "x"})]),
        _cc_line("r1", "a1", "user", [_result(1, "ok")]),
        {"uuid": "b1", "parentUuid": None, "logicalParentUuid": "not-in-the-file", "sessionId": "s",
         "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"},
        _cc_line("s1", "b1", "user", "This session is being continued from a previous conversation.",
                 isCompactSummary=True),
        _cc_line("a2", "s1", "assistant", [_use(2, "Edit", {"file_path": "/p/late.ex", "old_string": "a",
                                                            "new_string": "b"})]),
        _cc_line("r2", "a2", "user", [_result(2, "ok")]),
        _cc_line("a3", "r2", "assistant", "Done."),
    ]
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines))
    transcript = read_session(path)
    assert transcript.host_compactions == 1
    ex = extract(from_provider(transcript.whole(), transcript.provider).messages)
    assert list(ex.files) == ["/p/early.ex", "/p/late.ex"]
    assert [s.text for s in ex.intents] == ["Work on bead spotter-dov."]


def test_dream_renders_gotchas_with_literal_newlines_as_one_line(tmp_path):
    cfg = MemoryConfig(tmp_path / "p", tmp_path / "g")
    api.store(cfg, "gotcha", "Pre-commit validation failed:\\n\\n[FORMAT] Code is not formatted.\\nRun 'mix format' "
                             "→ fixed by Bash: mix format", notes=True)
    dream(cfg)
    memory = (cfg.project_home / "MEMORY.md").read_text("utf-8")
    assert "\\n" not in memory
    assert ("Pre-commit validation failed: [FORMAT] Code is not formatted. Run 'mix format' → fixed by Bash: "
            "mix format") in memory
