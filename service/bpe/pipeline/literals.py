"""Literals found in text, leftmost and longest first: one regex of all of them (a trie), built
without recursion, so a literal of any length works.

A trie regex is nested one group deep per point where a literal ends or two diverge. Python's
`re` parses and compiles groups recursively, so past `MAX_NESTING` levels (a file whose added
tokens are "<a>", "<a>a", "<a>aa", ...) the regex is a flat alternation instead, longest first,
which matches the same literal at each position.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

MAX_NESTING = 100  # groups inside groups; Python's `re` recurses a few frames per level
T = TypeVar("T")


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


class LiteralIndex:
    """A set of literals as one trie regex (`pattern`, one group, for `split`), and the
    leftmost-longest matches of any subset of them (`find`) without a regex per subset.

    Where the longest literal at a position is not in the subset, the longest one of the subset
    there is one of its prefixes (every literal that matches there is a prefix of the text from
    there, so of the longest one); with none, the search goes on from the next position. So a
    call's allowed special tokens compile nothing: the tokenizer's one regex serves them all.
    """

    __slots__ = ("_lengths", "_prefixes", "literals", "pattern")

    def __init__(self, literals: Iterable[str]) -> None:
        self.literals = frozenset(lit for lit in literals if lit)
        self.pattern = re.compile(f"({literal_trie(sorted(self.literals))})" if self else "(?!)")
        self._lengths = sorted({len(lit) for lit in self.literals}, reverse=True)
        self._prefixes: dict[str, tuple[str, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self.literals)

    def prefixes(self, literal: str) -> tuple[str, ...]:
        """The literals that are proper prefixes of `literal`, longest first."""
        found = self._prefixes.get(literal)
        if found is None:
            literals = self.literals
            cut = [literal[:n] for n in self._lengths if n < len(literal)]
            found = self._prefixes[literal] = tuple(p for p in cut if p in literals)
        return found

    def find(self, text: str, pick: Callable[[str], T | None]) -> Iterator[tuple[int, str, T]]:
        """(start, literal, what `pick` made of it) for the leftmost-longest literals `pick`
        takes (not None), without overlaps: what a trie of those literals alone finds."""
        if not self:
            return
        search = self.pattern.search
        pos = 0
        while (m := search(text, pos)) is not None:
            start, literal = m.start(), m.group()
            value = pick(literal)
            if value is None:
                for shorter in self.prefixes(literal):
                    if (value := pick(shorter)) is not None:
                        literal = shorter
                        break
                else:
                    pos = start + 1
                    continue
            yield start, literal, value
            pos = start + len(literal)
