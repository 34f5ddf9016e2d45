"""Codex's code mode: one `exec` tool whose input is a JavaScript program that calls the real tools.

With its GPT-6 models (`tool_mode: code_mode_only`, Codex 0.171) Codex offers the model a single
freeform tool, `exec`. The model writes JavaScript that calls the host's tools on a global
`tools` object and prints what it wants to see:

    const r = await tools.exec_command({cmd: "sed -n '1,200p' src/app.ts"});
    text(r.output);
    await tools.apply_patch(`*** Begin Patch ...`);

The call's output is what the program printed. `nested_calls` finds the tool calls in the
program (parsed with tree-sitter's JavaScript grammar, imported on first use) with their
arguments as far as literals tell them: strings, template literals, object literals, arrays,
numbers, booleans and names bound once to one of those (`const patch = \\`...\\``). A
template literal's `${…}` parts, which only running the program could tell, read as
`UNKNOWN_PART` (a NUL, which no path and no command prefix holds), so `cat ${f}` is still
a `cat` of a file ctxmill cannot name. `compress.vocab.tools.tool_kind` and
`compress.vocab.calls` read an `exec` call as the calls it makes.
What must hold: pure and total (a program that does not parse, or is not a string, has no
nested calls; nothing raises), and the same program always gives the same calls.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

UNKNOWN_PART = "\x00"
"""Stands for a `${…}` substitution of a template literal."""

TOOLS_OBJECT = "tools"
"""The global the program calls the host's tools on."""

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def program_of(tool_input: Any) -> str:
    """The JavaScript of an `exec` call's input: a freeform tool's raw text, or its `input`
    field ('' when neither is a string)."""
    if isinstance(tool_input, str):
        return tool_input
    value = tool_input.get("input") if isinstance(tool_input, dict) else None
    return value if isinstance(value, str) else ""


def nested_calls(tool_input: Any) -> tuple[tuple[str, Any], ...]:
    """(tool name, first argument) of each `tools.<name>(…)` call in an `exec` program, in source
    order; an argument no literal tells is None."""
    program = program_of(tool_input)
    if f"{TOOLS_OBJECT}." not in program:
        return ()
    return _calls(program)


@lru_cache(maxsize=4096)
def _calls(program: str) -> tuple[tuple[str, Any], ...]:
    """`nested_calls` of one program, remembered: the stages ask about every call of a long
    session on every request (a program parses in ~35 µs, an 80 KB one in ~1 ms). The argument
    values are shared: callers must not change them."""
    try:
        tree = _parser().parse(program.encode("utf-8", "surrogatepass"))
    except (ValueError, UnicodeError):
        return ()
    bound: dict[str, Any] = {}
    calls: list[tuple[str, Any]] = []
    stack = [tree.root_node]
    order: list[Any] = []
    while stack:  # pre-order, iterative: a deep program must not exhaust the Python stack
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(node.children))
    for node in order:
        if node.type == "variable_declarator":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None and value is not None and name.type == "identifier":
                bound.setdefault(_text(name), value)
    for node in order:
        if node.type != "call_expression":
            continue
        function = node.child_by_field_name("function")
        if function is None or function.type != "member_expression":
            continue
        owner, prop = function.child_by_field_name("object"), function.child_by_field_name("property")
        if owner is None or prop is None or owner.type != "identifier" or _text(owner) != TOOLS_OBJECT:
            continue
        arguments = node.child_by_field_name("arguments")
        first = next((c for c in arguments.named_children if c.type != "comment"), None) if arguments else None
        calls.append((_text(prop), _literal(first, bound, 0) if first is not None else None))
    return tuple(calls)


@lru_cache(maxsize=1)
def _parser():
    import tree_sitter
    import tree_sitter_javascript

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_javascript.language()))


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


_MAX_DEPTH = 8


def _literal(node, bound: dict[str, Any], depth: int) -> Any:
    """The value a literal node stands for (None when no literal tells it)."""
    if node is None or depth > _MAX_DEPTH:
        return None
    kind = node.type
    if kind in ("string", "template_string"):
        return _string(node)
    if kind == "number":
        try:
            return float(_text(node)) if any(c in _text(node) for c in ".eE") else int(_text(node), 0)
        except ValueError:
            return None
    if kind in ("true", "false"):
        return kind == "true"
    if kind == "array":
        return [_literal(c, bound, depth + 1) for c in node.named_children if c.type != "comment"]
    if kind == "object":
        out = {}
        for pair in node.named_children:
            if pair.type == "pair":
                key = pair.child_by_field_name("key")
                name = _string(key) if key is not None and key.type == "string" else _text(key) if key else ""
                out[name] = _literal(pair.child_by_field_name("value"), bound, depth + 1)
            elif pair.type == "shorthand_property_identifier":
                out[_text(pair)] = _literal(bound.get(_text(pair)), bound, depth + 1)
        return out
    if kind == "identifier":
        return _literal(bound.get(_text(node)), bound, depth + 1)
    if kind in ("parenthesized_expression", "await_expression"):
        inner = node.named_children
        return _literal(inner[0], bound, depth + 1) if len(inner) == 1 else None
    return None


def _string(node) -> str:
    """A string or template literal's text, escapes decoded, each `${…}` as `UNKNOWN_PART`."""
    parts: list[str] = []
    for child in node.children:
        if child.type == "string_fragment":
            parts.append(_text(child))
        elif child.type == "escape_sequence":
            parts.append(_unescape(_text(child)))
        elif child.type == "template_substitution":
            parts.append(UNKNOWN_PART)
    return "".join(parts)


def _unescape(sequence: str) -> str:
    """One JavaScript escape sequence (`\\n`, `\\x41`, `\\u{1F600}`, `\\'`, a line continuation)."""
    body = sequence[1:]
    if not body or body[0] in "\r\n":
        return ""
    if body[0] in _ESCAPES and len(body) == 1:
        return _ESCAPES[body[0]]
    if body[0] in "xu":
        digits = body[1:].strip("{}")
        try:
            return chr(int(digits, 16))
        except (ValueError, OverflowError):
            return sequence
    return body
