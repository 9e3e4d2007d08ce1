"""Finding stop strings in streamed text, and what of it must be held back.

`StopMatcher` is an Aho-Corasick automaton over the stop strings: a node is the longest suffix of
the text read so far that is a prefix of some stop string, so reading a text steps through each
character once (amortized), however the stop strings overlap. Stepping is Python, so a text is
first searched in C by `gate`, one regex that finds the first place where either a stop string or
a suffix that can be held back may begin; almost every piece of a stream has none, and where one
has, only the text from that place on is stepped through.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SPELLED = 16  # characters of each stop string's prefix that the gate checks one by one


class StopMatcher:
    """Aho-Corasick over the stop strings. A node is the longest suffix of the text read so far
    that is a prefix of some stop string; `depth[node]` is its length."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = list(dict.fromkeys(stops))
        goto: list[dict[str, int]] = [{}]
        depth, own = [0], [-1]
        for index, stop in enumerate(self.stops):
            node = 0
            for char in stop:
                nxt = goto[node].get(char)
                if nxt is None:
                    nxt = goto[node][char] = len(goto)
                    goto.append({})
                    depth.append(depth[node] + 1)
                    own.append(-1)
                node = nxt
            own[node] = index
        fail, out = [0] * len(goto), list(own)
        queue = list(goto[0].values())
        for node in queue:  # breadth first: a node's failure link is shallower, so already done
            for char, child in goto[node].items():
                link = fail[node]
                while link and char not in goto[link]:
                    link = fail[link]
                fail[child] = goto[link].get(char, 0) if node else 0
                if out[child] < 0:
                    out[child] = out[fail[child]]  # the longest stop string ending here
                queue.append(child)
        self._goto, self._fail, self._out, self.depth = goto, fail, out, depth
        firsts = sorted({stop[0] for stop in self.stops})
        self._first = re.compile("[" + "".join(map(re.escape, firsts)) + "]")
        self.gate = _gate(self.stops)

    def scan(self, text: str, node: int) -> tuple[int, int, int]:
        """Read `text` from `node`: (node, end, stop index) at the first stop string that ends
        in it (end: the index in `text` just after it), else (node after text, -1, -1)."""
        goto, fail, out, first = self._goto, self._fail, self._out, self._first
        i, n = 0, len(text)
        while i < n:
            if not node:
                found = first.search(text, i)
                if found is None:
                    return 0, -1, -1
                i = found.start()
            char = text[i]
            while node and char not in goto[node]:
                node = fail[node]
            node = goto[node].get(char, 0)
            i += 1
            if out[node] >= 0:
                return node, i, out[node]
        return node, -1, -1

    def walk(self, text: str) -> int:
        """The node after reading `text` from the start, or -1 if a stop string ends in it."""
        node, end, _ = self.scan(text, 0)
        return -1 if end >= 0 else node


def _gate(stops: Sequence[str]) -> re.Pattern[str]:
    """A regex whose first match in a text starts where the first stop string in it or its
    held-back suffix may begin (or nowhere): each stop string, and each one's proper prefixes at
    the end of the text. A prefix is spelled out for its first `_SPELLED` characters, past them
    only its length is checked, which keeps the pattern small; the automaton decides the rest.
    Every alternative starts with a literal character, so the search skips ahead in C."""
    alternatives = [re.escape(stop) for stop in stops]
    for stop in stops:
        prefix = stop[:-1]
        if prefix:
            spelled, unspelled = prefix[:_SPELLED], len(prefix) - _SPELLED
            pattern = re.escape(spelled[-1]) + (f".{{0,{unspelled}}}+" if unspelled > 0 else "")
            for char in reversed(spelled[:-1]):
                pattern = f"{re.escape(char)}(?:{pattern})?"
            alternatives.append(pattern + r"\Z")
    return re.compile("|".join(alternatives), re.DOTALL)
