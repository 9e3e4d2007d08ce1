"""Lone surrogates in parsed JSON: a `\\ud800` escape (or CESU-8 bytes) parses to a string
that holds no Unicode scalar value, so it cannot be a token, a pattern or any text of a store
file (all UTF-8). `lone_surrogate` says where the first one is."""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(doc: Any) -> str | None:
    """The JSON path of the first string of `doc` (a parsed JSON value) that holds a lone
    surrogate, e.g. `added_tokens[0].content` or `model.vocab: the key '\\ud800'`; None if
    there is none. Written without recursion, so any nesting the parser took is walked."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        at, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return at or "the document"
        elif isinstance(value, dict):
            for key in value:
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"{at or 'the document'}: the key {key!a}"
            stack.extend((f"{at}.{k}" if at else str(k), v) for k, v in reversed(value.items()))
        elif isinstance(value, list | tuple):
            stack.extend((f"{at}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None
