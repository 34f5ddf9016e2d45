"""compress.vocab.files: source code and prose by file name."""

from compress.vocab.files import is_data, is_prose, is_source


def test_source_and_prose_by_name():
    for path in ("/src/app.py", "lib/web/live.ex", "a/b.TSX", "Makefile", "docker/Dockerfile", "x.sql",
                 "Cargo.toml", ".github/workflows/ci.yml", "player.gd"):
        assert is_source(path), path
    for path in ("README.md", "notes.txt", "data.json", "app.log", "Cargo.lock", "", "/tmp/out.output"):
        assert not is_source(path), path
    assert is_prose("docs/guide.MD") and is_prose("a.rst") and not is_prose("a.py")


def test_data_logs_and_the_output_a_host_saved_to_a_file():
    """Claude Code and OpenCode save a tool's output too long to show to a file and tell the
    agent to read it: reading it is reading that output, cut as data."""
    for path in ("app.log", "events.jsonl", "/tmp/x.csv",
                 "/home/u/.claude/projects/-home-u-repo/8463c716/tool-results/toolu_019Cp.txt",
                 "/tmp/claude-tool-results/bwbrlsio0.txt",
                 "/home/u/.local/share/opencode/tool-output/tool_01JX",
                 "C:\\Users\\u\\.claude\\projects\\C--repo\\a32c\\tool-results\\biuphzf91.txt"):
        assert is_data(path), path
    for path in ("/repo/src/tool-results/view.tsx", "/repo/tool-output/README.md", "notes.txt", "/src/app.py"):
        assert not is_data(path), path
