"""Walking parsed JSON values. Imports nothing, so hooks that start a process per call can use it."""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a hook's process does not import typing for this
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


def strings_in(value: Any) -> Iterator[str]:
    """Every string in `value` (dict values, not keys), in document order, at any depth
    (iterative: no recursion limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
