"""How a pre-tokenization pattern cuts text into pieces: its matches, each match whole.

A group in a pattern captures nothing here: `regex`'s `findall` answers a pattern's groups
instead of its matches when it has any (`(\\w+)|\\s+|.` would cut "hello world" into "hello", "",
"world", dropping the space), so a pattern with groups is applied by `finditer`, each match
taken whole. A pattern without groups (every shipped one) keeps `findall`, which is faster.
"""

from __future__ import annotations

from collections.abc import Callable

import regex

Cut = Callable[[str], list[str]]


def matches_of(pattern: str) -> Cut:
    """The pieces `pattern` cuts a text into: its matches, whole, in order."""
    compiled = regex.compile(pattern)
    if not compiled.groups:
        findall: Cut = compiled.findall
        return findall
    finditer = compiled.finditer

    def whole(text: str) -> list[str]:
        return [m.group() for m in finditer(text)]

    return whole
