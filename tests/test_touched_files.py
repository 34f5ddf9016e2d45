"""touched_files: which files a tool call touches and how (compress.vocab.calls, touches, shell)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.vocab.calls import copied_texts, touched_files, written_texts
from compress.vocab.shell import shell_heredocs
from compress.vocab.tools import ToolKind, tool_kind
from compress.vocab.touches import CREATE, DELETE, EDIT, MOVE, READ, WRITE, FileTouch, normalize_path, same_file

PATCH = """*** Begin Patch
*** Add File: docs/new.md
+# New
*** Update File: src/app.py
*** Move to: src/main.py
@@
-old
+new
*** Delete File: src/legacy.py
*** End Patch"""


@pytest.mark.parametrize("name, tool_input, expected", [
    ("Read", {"file_path": "/repo/src/app.py", "offset": 10}, [("/repo/src/app.py", READ)]),
    ("Write", {"file_path": "/repo/./src//app.py", "content": "x"}, [("/repo/src/app.py", WRITE)]),
    ("Edit", {"file_path": "/repo/a/../b.py", "old_string": "a", "new_string": "b"}, [("/repo/b.py", EDIT)]),
    ("MultiEdit", {"file_path": "/r/m.py", "edits": [{"old_string": "a", "new_string": "b"}]}, [("/r/m.py", EDIT)]),
    ("NotebookEdit", {"notebook_path": "/r/n.ipynb", "new_source": "x"}, [("/r/n.ipynb", EDIT)]),
    ("read", {"filePath": "/r/x.ts"}, [("/r/x.ts", READ)]),
    ("edit", {"filePath": "/r/x.ts", "oldString": "a", "newString": "b"}, [("/r/x.ts", EDIT)]),
    ("write_file", {"path": "out/y.txt", "workdir": "/w"}, [("/w/out/y.txt", WRITE)]),
    ("mcp__fs__read_file", {"path": "/r/z.md"}, [("/r/z.md", READ)]),
    ("str_replace_based_edit_tool", {"command": "create", "path": "/r/c.py", "file_text": "x"}, [("/r/c.py", WRITE)]),
    ("str_replace_based_edit_tool", {"command": "view", "path": "/r/c.py"}, [("/r/c.py", READ)]),
    ("apply_patch", PATCH, [("docs/new.md", CREATE), ("src/app.py", MOVE), ("src/main.py", CREATE),
                            ("src/legacy.py", DELETE)]),
    ("apply_patch", {"patchText": "*** Begin Patch\n*** Update File: a.py\n*** End Patch"}, [("a.py", EDIT)]),
    ("shell", {"command": ["apply_patch", "*** Begin Patch\n*** Delete File: x.py\n*** End Patch"]}, [("x.py", DELETE)]),
    ("Glob", {"pattern": "**/*.py"}, []),
    ("WebFetch", {"url": "https://example.com/a.py"}, []),
    ("Read", "not a dict", []),
])
def test_file_tools(name, tool_input, expected):
    assert touched_files(name, tool_input) == [FileTouch(p, a) for p, a in expected]


@pytest.mark.parametrize("command, expected", [
    ("cat > src/a.py <<'EOF'\nprint(1)\n# > not a redirect\nEOF\npython src/a.py", [("src/a.py", WRITE)]),
    ("cd /repo && cat <<EOF > b.txt\nhello\nEOF", [("/repo/b.txt", WRITE)]),
    ("cat >> log.txt << \"END\"\nline\nEND", [("log.txt", EDIT)]),
    ("git commit -m \"$(cat <<'EOF'\nfix > bug\nEOF\n)\"", []),
    ("mv a.py b/c.py && rm -rf build x.log", [("a.py", MOVE), ("b/c.py", CREATE), ("build", DELETE), ("x.log", DELETE)]),
    ("git mv old.py new.py; git rm gone.py", [("old.py", MOVE), ("new.py", CREATE), ("gone.py", DELETE)]),
    ("sed -i 's/a/b/' f1 \"f 2\"; sed -n '1,20p' g", [("f1", EDIT), ("f 2", EDIT), ("g", READ)]),
    ("sed -i.bak -e 's/a/b/' conf.ini", [("conf.ini", EDIT)]),
    ("sed -i '' \"3a\\\\\n  \\\"total\\\": 1,\n\" skills/index.json", [("skills/index.json", EDIT)]),  # BSD/macOS sed
    ("sed -i .orig 's/a/b/' conf.ini", [("conf.ini", EDIT)]),
    ("head -n 20 h.txt | grep x > out.txt 2>&1", [("h.txt", READ), ("out.txt", WRITE)]),
    ("echo hi | tee -a log.txt; touch new.txt; cp a.txt b.txt", [("log.txt", EDIT), ("new.txt", CREATE),
                                                                 ("a.txt", READ), ("b.txt", WRITE)]),
    ("cp a.py b.py dest", [("a.py", READ), ("dest/a.py", WRITE), ("b.py", READ), ("dest/b.py", WRITE)]),
    ("python run.py > /dev/null 2> err.log < input.txt", [("err.log", WRITE), ("input.txt", READ)]),
    ("FOO=1 sudo cat /etc/hosts", [("/etc/hosts", READ)]),
    ("echo 'unbalanced > x", []),
    ("ls -la && pytest -q", []),
])
def test_shell_commands(command, expected):
    assert touched_files("Bash", {"command": command}) == [FileTouch(p, a) for p, a in expected]


def test_codex_shapes_use_workdir_and_argv():
    assert touched_files("exec_command", {"cmd": "cat README.md", "workdir": "/w"}) == [FileTouch("/w/README.md", READ)]
    argv = {"command": ["bash", "-lc", "cat > notes.txt <<'EOF'\nhi\nEOF"], "workdir": "/w"}
    assert touched_files("shell", argv) == [FileTouch("/w/notes.txt", WRITE)]


def test_heredocs_know_their_targets():
    command = "cat > a.txt <<'A'\nalpha\nA\npython - <<B\nprint(2)\nB\ncd /x && tee b.txt <<-C\n\tbeta\n\tC"
    docs = shell_heredocs(command)
    assert [(d.delimiter, d.body, d.targets) for d in docs] == [
        ("A", "alpha", ("a.txt",)), ("B", "print(2)", ()), ("C", "\tbeta", ("/x/b.txt",))]


def test_codex_on_windows_powershell():
    """Codex's `shell_command` runs PowerShell: Get-Content reads, a here-string piped to
    Set-Content writes its body, paths take backslashes."""
    read = {"command": "Get-Content fullstack\\src\\app.ts -TotalCount 200", "workdir": "C:\\Users\\w"}
    assert tool_kind("shell_command", read) is ToolKind.FILE_READ
    assert touched_files("shell_command", read) == [FileTouch("C:/Users/w/fullstack/src/app.ts", READ)]
    assert touched_files("shell_command", {"command": "gc -Path a.ts -Encoding utf8"}) == [FileTouch("a.ts", READ)]
    write = {"command": "@'\nconst a = 1;\n'@ | Set-Content -NoNewline src\\a.ts"}
    assert touched_files("shell_command", write) == [FileTouch("src/a.ts", WRITE)]
    assert [(d.body, d.targets) for d in shell_heredocs(write["command"])] == [("const a = 1;", ("src/a.ts",))]
    numbered = ("@'\n$i=1; Get-Content src\\x.ts | ForEach-Object { '{0,4}: {1}' -f $i, $_; $i++ }\n"
                "'@ | powershell -NoProfile -Command -")  # a script piped to PowerShell is parsed as one
    assert shell_heredocs(numbered) == ()
    assert touched_files("shell_command", {"command": numbered}) == [FileTouch("src/x.ts", READ)]
    assert tool_kind("shell_command", {"command": numbered}) is ToolKind.FILE_READ
    counted = "$i=0; Get-Content src\\a.vue | ForEach-Object { $i++; '{0,4}: {1}' -f $i, $_ }"
    assert tool_kind("shell_command", {"command": counted}) is ToolKind.FILE_READ
    assert touched_files("shell_command", {"command": counted}) == [FileTouch("src/a.vue", READ)]
    assert tool_kind("shell_command", {"command": "npm.cmd test"}) is ToolKind.COMMAND


def test_windows_paths_of_reads_and_patches_name_the_same_file():
    """A relative read under a Windows working directory and a patch naming the file by its
    absolute Windows path agree, so the file counts as changed after the read."""
    read = {"command": "Get-Content src\\app.ts", "workdir": "C:\\Users\\w\\backend"}
    patch = {"input": "*** Begin Patch\n*** Update File: C:\\Users\\w\\backend\\src\\app.ts\n@@\n-a\n+b\n*** End Patch"}
    assert touched_files("shell_command", read) == [FileTouch("C:/Users/w/backend/src/app.ts", READ)]
    assert touched_files("apply_patch", patch) == [FileTouch("C:/Users/w/backend/src/app.ts", EDIT)]
    assert normalize_path("..\\lib\\x.ts", "C:\\Users\\w\\backend") == "C:/Users/w/lib/x.ts"
    assert normalize_path("D:/abs.ts", "C:\\w") == "D:/abs.ts"  # a drive path is absolute: never joined
    assert normalize_path("x.ts", "c:\\w") == normalize_path("C:\\w\\x.ts") == "C:/w/x.ts"
    assert same_file("C:/Users/w/backend/src/app.ts", "src/app.ts")
    assert normalize_path("a\\b.txt", "/home/u") == "/home/u/a\\b.txt"  # a POSIX name may hold a backslash


@pytest.mark.parametrize("command, kind", [
    ("nl -ba src/x.py | sed -n '1,80p'", ToolKind.FILE_READ),
    ("Get-Content a.ts | Select-Object -Skip 10 -First 50", ToolKind.FILE_READ),
    ("cat a.py | grep foo", ToolKind.COMMAND),
    ("cat a.py && rm a.py", ToolKind.COMMAND),
    ("rg foo src", ToolKind.SEARCH),
    ("Get-ChildItem -Recurse src", ToolKind.FILE_LIST),
])
def test_a_read_piped_through_a_window_is_still_a_read(command, kind):
    assert tool_kind("exec_command", {"cmd": command}) is kind


def test_copied_texts_of_edits_and_patches():
    """What an edit or patch copies out of the model's view of a file: old strings, a patch's
    context and removed lines and its @@ anchors (not its added lines, not a new file's)."""
    assert copied_texts("Edit", {"file_path": "a", "old_string": "x = 1", "new_string": "x = 2"}) == ["x = 1"]
    patch = ("*** Begin Patch\n*** Add File: n.py\n+fresh\n*** Update File: a.py\n@@ def f():\n"
             "     keep = 1\n-    old = 2\n+    new = 2\n*** End Patch")
    expected = ["def f():\n    keep = 1\n    old = 2"]
    assert copied_texts("apply_patch", {"input": patch}) == expected
    assert copied_texts("shell", {"command": ["apply_patch", patch]}) == expected
    assert copied_texts("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}\nEOF"}) == expected
    assert copied_texts("Bash", {"command": "ls"}) == []


def test_written_texts_of_writes_edits_patches_and_heredocs():
    """What a call leaves in its files: bodies and new strings (also a MultiEdit's), a patch's
    added and context lines (a new file's too), a heredoc's body when it writes a file."""
    assert written_texts("Edit", {"file_path": "a", "old_string": "x = 1", "new_string": "x = 2"}) == ["x = 2"]
    assert written_texts("MultiEdit", {"file_path": "a", "edits": [{"old_string": "a", "new_string": "b"},
                                                                  {"old_string": "c", "new_string": "d"}]}) == ["b", "d"]
    assert written_texts("Write", {"file_path": "a", "content": "body"}) == ["body"]
    patch = ("*** Begin Patch\n*** Add File: n.py\n+fresh\n*** Update File: a.py\n@@ def f():\n"
             "     keep = 1\n-    old = 2\n+    new = 2\n*** Delete File: b.py\n*** End Patch")
    expected = ["fresh\n    keep = 1\n    new = 2"]
    assert written_texts("apply_patch", {"input": patch}) == expected
    assert written_texts("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}\nEOF"}) == expected
    assert written_texts("Bash", {"command": "cat > a.py <<'EOF'\nprint(1)\nEOF"}) == ["print(1)"]
    assert written_texts("Bash", {"command": "python - <<'EOF'\nprint(1)\nEOF"}) == []
    assert written_texts("Read", {"file_path": "a"}) == []


def test_normalize_and_same_file():
    assert normalize_path("'./src//x/../a.py'") == "src/a.py"
    assert normalize_path("a.py", "/repo") == "/repo/a.py"
    assert normalize_path(".") == "" and normalize_path("") == ""
    assert same_file("/home/u/proj/src/a.py", "src/a.py")
    assert same_file("src/a.py", "/home/u/proj/src/a.py")
    assert not same_file("/home/u/proj/a.py", "a.py")  # a bare name is not obviously the same file
    assert not same_file("/x/notsrc/a.py", "src/a.py")
    assert not same_file("src/a.py", "lib/src/a.py")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["Bash", "Write", "Read", "apply_patch", "exec_command", "Edit"]),
       st.one_of(st.text(), st.dictionaries(st.sampled_from(["command", "cmd", "file_path", "patch", "workdir"]),
                                             st.one_of(st.text(), st.lists(st.text(), max_size=3)), max_size=3)))
def test_never_raises_and_paths_are_normalised(name, tool_input):
    for touch in touched_files(name, tool_input):
        assert touch.action in (READ, WRITE, EDIT, DELETE, MOVE, CREATE)
        assert touch.path and touch.path == normalize_path(touch.path)


@given(st.text(alphabet="\x00ab1 <>'EOF\n", max_size=40))
def test_a_command_holding_nul_characters_of_its_own_never_breaks_the_heredoc_reader(command):
    """The reader marks each heredoc with a NUL-led word; a command's own NULs (tool input is
    anyone's text) are not markers: no exception, and every heredoc found is one of the command's."""
    heredocs = shell_heredocs(command)
    assert all(h.body in command for h in heredocs)


def test_a_nul_word_that_is_not_a_heredoc_marker_is_ignored():
    assert shell_heredocs("echo \x00abc > f") == ()
    [heredoc] = shell_heredocs("cat > out.txt <<'EOF' \x00x\nbody\nEOF")
    assert heredoc.body == "body" and heredoc.targets == ("out.txt",)
