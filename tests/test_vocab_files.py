"""compress.vocab.files: source code and prose by file name."""

from compress.vocab.files import is_prose, is_source


def test_source_and_prose_by_name():
    for path in ("/src/app.py", "lib/web/live.ex", "a/b.TSX", "Makefile", "docker/Dockerfile", "x.sql"):
        assert is_source(path), path
    for path in ("README.md", "notes.txt", "data.json", "app.log", "Cargo.lock", "", "/tmp/out.output"):
        assert not is_source(path), path
    assert is_prose("docs/guide.MD") and is_prose("a.rst") and not is_prose("a.py")
