"""Finding stop strings in streamed text, and what of it must be held back.

`StopMatcher` is an Aho-Corasick automaton over the stop strings: a node is the longest suffix of
the text read so far that is a prefix of some stop string, so reading a text steps through each
character once (amortized), however the stop strings overlap. Stepping is Python, so the common
cases are answered in C first: a regex of the stop strings says whether any is in a text, a regex
of their first characters skips to where one can begin, and a text whose end holds none of the
characters of a proper prefix holds nothing back. Only the last `longest - 1` characters of a text
decide what is held back; short texts, which repeat (one token's text), are remembered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_REMEMBERED, _REMEMBERED_CHARS = 1024, 16  # held lengths of short texts kept per matcher


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
        self.firsts = frozenset(stop[0] for stop in self.stops)
        self.longest = max(map(len, self.stops))
        self._held: dict[str, int] = {}  # short text -> held_length(text)
        self.whole = re.compile("|".join(map(re.escape, self.stops)))  # is any in a text?
        self.inner = frozenset("".join(stop[:-1] for stop in self.stops))  # in proper prefixes
        self._first = re.compile("[" + "".join(map(re.escape, sorted(self.firsts))) + "]")

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

    def held_length(self, text: str) -> int:
        """The length of the longest suffix of `text` (which holds no stop string) that is a
        proper prefix of a stop string: only the last `longest - 1` characters are read, and
        short texts, which repeat (a token's text), are remembered."""
        known = self._held.get(text)
        if known is not None:
            return known
        tail = text[max(0, len(text) - self.longest + 1) :]
        if text[-1] not in self.inner or self.firsts.isdisjoint(tail):
            keep = 0
        else:
            keep = self.depth[self.walk(tail)]
        if len(text) <= _REMEMBERED_CHARS:
            if len(self._held) >= _REMEMBERED:
                self._held.clear()
            self._held[text] = keep
        return keep

    def walk(self, text: str) -> int:
        """The node after reading `text` from the start, or -1 if a stop string ends in it."""
        node, end, _ = self.scan(text, 0)
        return -1 if end >= 0 else node
