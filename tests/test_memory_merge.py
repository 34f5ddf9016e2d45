"""Team memory in git: two branches that add, edit or forget entries merge entry by entry, with a
real `git merge` through the driver `ctxmill install` registers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmill.install.git_memory import attribute_lines, driver_lines, register, unregister
from memory.markdown import parse
from memory.merge import merge

BASE = """# Memory

Notes for the team; keep entries short.

## Decisions

- Use BM25 for search. <!-- m-00000001 2025-06-01 -->
- Keep the proxy on loopback. <!-- m-00000002 2025-06-01 #proxy -->

## Gotchas

- The CI machine has 2 cores. <!-- m-00000003 2025-06-02 -->
"""


def texts(text: str) -> dict[str, str]:
    return {e.id: e.text for e in parse(text).entries()}


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


def test_changes_of_both_sides_are_kept_entry_by_entry():
    ours = edit(BASE, "Use BM25 for search.", "Use BM25 with identifier splitting for search.")
    ours = edit(ours, "- The CI machine has 2 cores. <!-- m-00000003 2025-06-02 -->\n",
                "- The CI machine has 2 cores. <!-- m-00000003 2025-06-02 -->\n- Ours added this. <!-- m-0000000a 2025-07-01 -->\n")
    theirs = edit(BASE, "- Keep the proxy on loopback. <!-- m-00000002 2025-06-01 #proxy -->\n", "")  # forgotten
    theirs = edit(theirs, "The CI machine has 2 cores.", "The CI machine has 2 cores, shared by 8 jobs.")
    theirs = edit(theirs, "## Gotchas\n", "## Gotchas\n\n- Theirs added this. <!-- m-0000000b 2025-07-02 -->\n")
    result = merge(BASE, ours, theirs)
    assert result.clean and not result.renamed
    assert texts(result.text) == {"m-00000001": "Use BM25 with identifier splitting for search.",
                                  "m-00000003": "The CI machine has 2 cores, shared by 8 jobs.",
                                  "m-0000000a": "Ours added this.", "m-0000000b": "Theirs added this."}
    assert "Notes for the team" in result.text


def test_conflicting_edits_keep_both_versions_under_unique_ids():
    ours = edit(BASE, "Use BM25 for search.", "Use BM25 (ours).")
    theirs = edit(BASE, "Use BM25 for search.", "Use BM25 (theirs).")
    theirs = edit(theirs, "- Keep the proxy", "- Same id, other text. <!-- m-0000000a 2025-07-03 -->\n- Keep the proxy")
    ours = edit(ours, "- Keep the proxy", "- Same id, our text. <!-- m-0000000a 2025-07-03 -->\n- Keep the proxy")
    result = merge(BASE, ours, theirs)
    entries = parse(result.text).entries()
    assert max(Counter(e.id for e in entries).values()) == 1
    assert {e.text for e in entries} >= {"Use BM25 (ours).", "Use BM25 (theirs).", "Same id, our text.",
                                         "Same id, other text."}
    assert [old for old, _ in result.renamed] == ["m-00000001", "m-0000000a"]


def test_an_edit_beats_a_forget_on_either_side():
    edited = edit(BASE, "Keep the proxy on loopback.", "Keep the proxy on loopback unless --allow-remote.")
    forgot = edit(BASE, "- Keep the proxy on loopback. <!-- m-00000002 2025-06-01 #proxy -->\n", "")
    for ours, theirs in ((edited, forgot), (forgot, edited)):
        assert texts(merge(BASE, ours, theirs).text)["m-00000002"] == "Keep the proxy on loopback unless --allow-remote."


def test_prose_changed_on_both_sides_is_not_merged_here():
    ours, theirs = edit(BASE, "keep entries short", "ours"), edit(BASE, "keep entries short", "theirs")
    assert not merge(BASE, ours, theirs).clean


entries_st = st.dictionaries(st.sampled_from([f"m-{i:08x}" for i in range(8)]),
                             st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=12),
                             max_size=6)


def document(entries: dict[str, str]) -> str:
    return "# Memory\n\n## Notes\n\n" + "".join(f"- {text} <!-- {i} -->\n" for i, text in entries.items())


@settings(max_examples=150, deadline=None)
@given(entries_st, entries_st, entries_st)
def test_any_merge_keeps_ids_unique_and_merging_with_itself_is_identity(base, ours, theirs):
    result = merge(document(base), document(ours), document(theirs))
    assert result.clean
    ids = [e.id for e in parse(result.text).entries()]
    assert len(ids) == len(set(ids))
    assert "<<<<<<<" not in result.text
    for side in (ours, theirs):  # what a side changed since base is in the result
        changed = {i: t for i, t in side.items() if base.get(i) != t}
        assert set(changed.values()) <= {e.text for e in parse(result.text).entries()}
    assert merge(document(ours), document(ours), document(ours)).text == document(ours)


def git(repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo,
                          capture_output=True, text=True, timeout=60)


def test_a_real_git_merge_of_two_branches_has_no_conflict_markers(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".ctxmill").mkdir(parents=True)
    assert git(repo, "init", "-q", "-b", "main").returncode == 0
    assert register(repo, [sys.executable, "-m", "ctxmill"])
    assert register(repo, [sys.executable, "-m", "ctxmill"]) == []  # idempotent
    memory = repo / ".ctxmill" / "MEMORY.md"
    memory.write_text(BASE)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "other")
    memory.write_text(edit(edit(BASE, "Use BM25 for search.", "Use BM25 (theirs)."), "## Gotchas\n",
                           "## Gotchas\n\n- Theirs added this. <!-- m-0000000b 2025-07-02 -->\n"))
    git(repo, "commit", "-qam", "theirs")
    git(repo, "checkout", "-q", "main")
    memory.write_text(edit(edit(BASE, "Use BM25 for search.", "Use BM25 (ours)."),
                           "- The CI machine has 2 cores. <!-- m-00000003 2025-06-02 -->\n", ""))
    git(repo, "commit", "-qam", "ours")
    merged = git(repo, "merge", "-q", "--no-edit", "other")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    text = memory.read_text()
    assert "<<<<<<<" not in text and ">>>>>>>" not in text
    entries = parse(text).entries()
    assert len({e.id for e in entries}) == len(entries)
    assert {e.text for e in entries} == {"Use BM25 (ours).", "Use BM25 (theirs).", "Keep the proxy on loopback.",
                                         "Theirs added this."}


def test_install_registers_the_driver_in_a_git_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    done = subprocess.run([sys.executable, "-m", "ctxmill", "install", "claude-code", "--project"], cwd=repo,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    assert ".ctxmill/MEMORY.md merge=union" in (repo / ".gitattributes").read_text()  # any clone
    assert ".ctxmill/MEMORY.md merge=ctxmill-memory" in (repo / ".git" / "info" / "attributes").read_text()  # here
    driver = git(repo, "config", "--get", "merge.ctxmill-memory.driver").stdout
    assert driver.strip().endswith("merge-memory %O %A %B %P")
    assert git(repo, "check-attr", "merge", ".ctxmill/MEMORY.md").stdout.strip().endswith("ctxmill-memory")


def test_install_leaves_no_backup_among_the_repositorys_untracked_files(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / ".claude" / "settings.json").write_text('{"permissions": {}}\n')
    (repo / ".mcp.json").write_text('{"mcpServers": {}}\n')
    done = subprocess.run([sys.executable, "-m", "ctxmill", "install", "claude-code", "--project"], cwd=repo,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    assert list(repo.rglob("*.ctxmill.bak"))  # kept for uninstall…
    assert ".ctxmill.bak" not in git(repo, "status", "--porcelain", "--untracked-files=all").stdout  # …never shown


def test_identical_entries_added_on_both_branches_are_kept_once():
    ours = edit(BASE, "## Gotchas\n", "## Gotchas\n\n- Run ruff before pushing. <!-- m-0000000a 2025-07-01 -->\n")
    theirs = edit(BASE, "## Gotchas\n", "## Gotchas\n\n- Run ruff before pushing. <!-- m-0000000b 2025-07-02 -->\n")
    result = merge(BASE, ours, theirs)
    assert [e.text for e in parse(result.text).entries()].count("Run ruff before pushing.") == 1


def test_a_fresh_clone_with_no_driver_merges_without_conflict_markers(tmp_path):
    origin = tmp_path / "origin"
    (origin / ".ctxmill").mkdir(parents=True)
    git(origin, "init", "-q", "-b", "main")
    register(origin, [sys.executable, "-m", "ctxmill"])
    (origin / ".ctxmill" / "MEMORY.md").write_text(BASE)
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "base")
    clone = tmp_path / "clone"
    assert git(tmp_path, "clone", "-q", str(origin), str(clone)).returncode == 0  # no ctxmill install here
    assert git(clone, "config", "--get", "merge.ctxmill-memory.driver").stdout == ""
    memory = clone / ".ctxmill" / "MEMORY.md"
    git(clone, "checkout", "-qb", "other")
    memory.write_text(edit(BASE, "## Gotchas\n", "## Gotchas\n\n- Theirs added this. <!-- m-0000000b 2025-07-02 -->\n"))
    git(clone, "commit", "-qam", "theirs")
    git(clone, "checkout", "-q", "main")
    memory.write_text(edit(BASE, "## Gotchas\n", "## Gotchas\n\n- Ours added this. <!-- m-0000000a 2025-07-01 -->\n"))
    git(clone, "commit", "-qam", "ours")
    merged = git(clone, "merge", "-q", "--no-edit", "other")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    text = memory.read_text()
    assert "<<<<<<<" not in text
    entries = parse(text).entries()
    assert {"Ours added this.", "Theirs added this.", "Use BM25 for search."} <= {e.text for e in entries}
    assert len({e.id for e in entries}) == len(entries)


def test_uninstall_takes_the_driver_away_and_keeps_other_attributes(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitattributes").write_text("*.png binary\n")
    register(repo, ["ctxmill"])
    assert unregister(repo) and (repo / ".gitattributes").read_text() == "*.png binary\n"
    assert git(repo, "config", "--get", "merge.ctxmill-memory.driver").stdout == ""
    register(repo, ["ctxmill"])
    (repo / ".gitattributes").write_text("".join(f"{line}\n" for line in attribute_lines()))
    unregister(repo)
    assert not (repo / ".gitattributes").exists()
    assert not (repo / ".git" / "info" / "attributes").exists() or not any(
        line in (repo / ".git" / "info" / "attributes").read_text() for line in driver_lines())
