"""Literals found in text, leftmost and longest first: one regex of all of them (a trie), built
without recursion, so a literal of any length works.

A trie regex is nested one group deep per point where a literal ends or two diverge. Python's
`re` parses and compiles groups recursively, so past `MAX_NESTING` levels (a file whose added
tokens are "<a>", "<a>a", "<a>aa", ...) the regex is a flat alternation instead, longest first,
which matches the same literal at each position.
"""

from __future__ import annotations

import re
from typing import Any

MAX_NESTING = 100  # groups inside groups; Python's `re` recurses a few frames per level


def literal_trie(literals: list[str]) -> str:
    """A regex matching the longest of `literals` that starts at a position: the literals as a
    trie (a node's longer continuations tried before it ends), so a search costs a walk down the
    trie, not a try of every literal (Gemma has 6,414 added tokens)."""
    root: dict[str, Any] = {}
    for lit in literals:
        node = root
        for ch in lit:
            node = node.setdefault(ch, {})
        node[""] = True
    out: list[str] = []
    deepest = 0
    # a node to write at its nesting depth, or text to write as it is, in the order written
    todo: list[tuple[dict[str, Any], int] | str] = [(root, 0)]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node, depth = item
        children = sorted(ch for ch in node if ch)
        if not children:
            continue
        ends = "" in node
        wrap = ends or len(children) > 1
        inner = depth + wrap
        deepest = max(deepest, inner)
        steps: list[tuple[dict[str, Any], int] | str] = ["(?:"] if wrap else []
        for i, ch in enumerate(children):
            if i:
                steps.append("|")
            steps += [re.escape(ch), (node[ch], inner)]
        if wrap:
            steps.append(")?" if ends else ")")
        todo += reversed(steps)
    if deepest > MAX_NESTING:
        longest_first = sorted({lit for lit in literals if lit}, key=lambda s: (-len(s), s))
        return "|".join(map(re.escape, longest_first))
    return "".join(out)
