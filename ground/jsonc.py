"""JSON with comments (JSONC, as OpenCode and VS Code read it): parse, and edit one member in place.

`loads(text)` accepts `//` and `/* */` comments and trailing commas. `set_member(text, path,
value)` and `remove_member(text, path)` change the source text only where that member is, so
comments, order and formatting elsewhere stay byte for byte. Any text `loads` rejects raises
`ValueError` (with line and column), and so do the editors: the caller leaves such a file alone.

Written here rather than taken from PyPI: the round-trip JSONC editors there either run a Node
daemon that installs npm packages at run time or do not read block comments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_PUNCT = "{}[]:,"


@dataclass
class _Node:
    start: int
    end: int  # one past the last character
    value: Any = None
    members: list[tuple[str, int, _Node]] = field(default_factory=list)  # (key, key start, value node)
    items: list[_Node] = field(default_factory=list)
    kind: str = "scalar"  # object | array | scalar


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str, at: int | None = None) -> ValueError:
        at = self.pos if at is None else at
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return ValueError(f"{message} at line {line}, column {column}")

    def skip(self) -> None:
        t = self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c in " \t\r\n\ufeff":
                self.pos += 1
            elif t.startswith("//", self.pos):
                end = t.find("\n", self.pos)
                self.pos = len(t) if end < 0 else end
            elif t.startswith("/*", self.pos):
                end = t.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unclosed comment")
                self.pos = end + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def value(self) -> _Node:
        c = self.peek()
        start = self.pos
        if c == "{":
            return self.container(start, "object", "}")
        if c == "[":
            return self.container(start, "array", "]")
        if c == '"':
            text, end = self.string()
            return _Node(start, end, text)
        end = start
        while end < len(self.text) and self.text[end] not in _PUNCT + " \t\r\n/":
            end += 1
        try:
            value = json.loads(self.text[start:end])
        except ValueError:
            raise self.error("expected a JSON value", start) from None
        self.pos = end
        return _Node(start, end, value)

    def string(self) -> tuple[str, int]:
        try:
            value, end = json.JSONDecoder().raw_decode(self.text, self.pos)
        except ValueError:
            raise self.error("bad string") from None
        if not isinstance(value, str):
            raise self.error("expected a string")
        self.pos = end
        return value, end

    def container(self, start: int, kind: str, close: str) -> _Node:
        node = _Node(start, start, kind=kind)
        self.pos += 1
        while True:
            c = self.peek()
            if c == close:
                self.pos += 1
                node.end = self.pos
                node.value = ({k: v.value for k, _, v in node.members} if kind == "object"
                              else [v.value for v in node.items])
                return node
            if kind == "object":
                if c != '"':
                    raise self.error("expected a member name")
                key_start = self.pos
                key, _ = self.string()
                if self.peek() != ":":
                    raise self.error("expected ':'")
                self.pos += 1
                node.members.append((key, key_start, self.value()))
            else:
                node.items.append(self.value())
            c = self.peek()
            if c == ",":
                self.pos += 1
            elif c != close:
                raise self.error(f"expected ',' or '{close}'")


def _parse(text: str) -> _Node:
    parser = _Parser(text)
    if not parser.peek():
        return _Node(0, 0, {}, kind="empty")
    root = parser.value()
    if parser.peek():
        raise parser.error("text after the value")
    return root


def loads(text: str) -> Any:
    """The value of a JSONC text ({} for an empty one)."""
    return _parse(text).value


def _line_indent(text: str, at: int) -> str:
    line = text[text.rfind("\n", 0, at) + 1:at]
    return line[:len(line) - len(line.lstrip(" \t"))]


def _dump(value: Any, indent: str) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def set_member(text: str, path: list[str], value: Any) -> str:
    """`text` with the member at `path` (object keys from the root) set to `value`; objects on
    the way are created. The root must be an object (or the text empty)."""
    root = _parse(text)
    if root.kind == "empty":
        nested: Any = value
        for key in reversed(path):
            nested = {key: nested}
        return _dump(nested, "") + "\n" + text
    node = root
    for depth, key in enumerate(path):
        if node.kind != "object":
            raise ValueError(f"{'.'.join(path[:depth]) or 'the root'} is not an object")
        found = next((v for k, _, v in node.members if k == key), None)
        if found is None:
            rest: Any = value
            for k in reversed(path[depth + 1:]):
                rest = {k: rest}
            return _insert(text, node, key, rest)
        if depth == len(path) - 1:
            indent = _line_indent(text, found.start)
            return text[:found.start] + _dump(value, indent) + text[found.end:]
        node = found
    raise ValueError("empty path")


def _end_of_line_comment(text: str, at: int) -> int:
    """`at`, or past a `// comment` that ends the line there (a note belongs to its line)."""
    rest = text[at:text.find("\n", at) if "\n" in text[at:] else len(text)]
    return at + len(rest) if rest.strip().startswith("//") else at


def _insert(text: str, obj: _Node, key: str, value: Any) -> str:
    outer = _line_indent(text, obj.start)
    if obj.members:
        _, key_start, last = obj.members[-1]
        indent = _line_indent(text, key_start)
        member = f"{json.dumps(key)}: {_dump(value, indent)}"
        after = _Parser(text)
        after.pos = last.end
        if after.peek() == ",":  # a trailing comma: the new member goes after it (and its line's comment)
            at = _end_of_line_comment(text, after.pos + 1)
            return text[:at] + f"\n{indent}{member}," + text[at:]
        at = _end_of_line_comment(text, last.end)
        return text[:last.end] + "," + text[last.end:at] + f"\n{indent}{member}" + text[at:]
    indent = outer + "  "
    inside = text[obj.start + 1:obj.end - 1]
    member = f"{json.dumps(key)}: {_dump(value, indent)}"
    return text[:obj.start + 1] + inside.rstrip(" \t\n") + f"\n{indent}{member}\n{outer}" + text[obj.end - 1:]


def remove_member(text: str, path: list[str]) -> str:
    """`text` without the member at `path` (unchanged when there is none)."""
    root = _parse(text)
    node = root
    for depth, key in enumerate(path):
        if node.kind != "object":
            return text
        index = next((i for i, (k, _, _) in enumerate(node.members) if k == key), None)
        if index is None:
            return text
        if depth < len(path) - 1:
            node = node.members[index][2]
            continue
        _, key_start, value = node.members[index]
        line_start = text.rfind("\n", 0, key_start) + 1
        start = line_start if text[line_start:key_start].strip() == "" else key_start
        scan = _Parser(text)
        scan.pos = value.end
        if scan.peek() == ",":  # drop through the comma after it, and the rest of its line if blank
            end = scan.pos + 1
            nxt = text.find("\n", end)
            if nxt >= 0 and text[end:nxt].strip() == "":
                end = nxt + 1
            return text[:start] + text[end:]
        if index > 0:  # the last member: drop from the end of the one before (its comma goes too)
            return text[:node.members[index - 1][2].end] + text[value.end:]
        return text[:start] + text[value.end:].lstrip(" \t")
    return text
