"""Finding stop strings in streamed text, and what of it must be held back.

`StopMatcher` is an Aho-Corasick automaton over the stop strings: a node is the longest suffix of
the text read so far that is a prefix of some stop string, so reading a text steps through each
character once (amortized), however the stop strings overlap. Stepping is Python, so a short text is
first searched in C by `gate`, one regex that finds the first place where a stop string or a
suffix to hold back may begin; almost every piece of a stream has none. Where one has, the
gate's match is the suffix to hold back when the stop strings are short and none lies inside
another's prefix; otherwise the automaton steps from there on.

The regex costs up to a stop string's length at each place a stop string's first character
appears, so a long text (past `LONG` characters: a whole step, line or message of ids) is
searched otherwise, in linear time: `str.find` for each stop string (C, two-way search), then
the automaton on the last characters alone, where a suffix to hold back must lie.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SPELLED = 16  # characters of each stop string's prefix that the gate checks one by one
LONG = 64  # characters past which a text is searched in linear time, not by the gate's regex


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
        self.regex = _gate(self.stops)
        self._longest = max(map(len, self.stops))
        self._exact = max(map(len, self.stops)) <= _SPELLED + 1 and not any(
            inner in stop[:-1] for stop in self.stops for inner in self.stops
        )  # a match of the gate that is no stop string is exactly the suffix to hold back

    def gate(self, text: str) -> re.Match[str] | bool | None:
        """Falsy if no stop string and no suffix to hold back can begin in `text`; else a match
        starting where the first may begin (a short text) or True (a long one: `find` decides)."""
        return self.regex.search(text) if len(text) <= LONG else True

    def find(self, text: str, found: re.Match[str] | bool | None = None) -> tuple[int, int]:
        """(cut, index): stop string `index` ends at `cut` in `text`, the first to end (the
        longest of those ending there); or, index -1, none does and `text[cut:]` is the longest
        suffix that is a proper prefix of one. `found`: the gate's answer, if asked already."""
        if len(text) > LONG:
            return self._find_long(text)
        found = found or self.regex.search(text)
        if not isinstance(found, re.Match):
            return len(text), -1
        start = found.start()
        if self._exact and found.end() == len(text) and found[0] not in self.stops:
            return start, -1
        node, end, index = self.scan(text[start:], 0)
        return (len(text) - self.depth[node], -1) if end < 0 else (start + end, index)

    def _find_long(self, text: str) -> tuple[int, int]:
        """`find` in linear time: each stop string's first place by `str.find`, the earliest end
        (the longest on a tie) wins; else the held suffix, from the text's last characters."""
        ends = [
            (at + len(stop), -len(stop), index)
            for index, stop in enumerate(self.stops)
            if (at := text.find(stop)) >= 0
        ]
        if ends:
            end, _, index = min(ends)
            return end, index
        node, _, _ = self.scan(text[len(text) - self._longest + 1 :], 0)
        return len(text) - self.depth[node], -1

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
    """The stop strings, grouped by their first character (so the regex compiler merges what they
    share and a text that keeps almost matching costs no more per character than one stop string),
    and each one's proper prefixes at the end of the text. Every alternative starts with a literal
    character, so the search skips ahead in C."""
    alternatives = []
    for first in dict.fromkeys(stop[0] for stop in stops):
        rests = [re.escape(stop[1:]) for stop in stops if stop[0] == first]
        alternatives.append(re.escape(first) + ("" if "" in rests else f"(?:{'|'.join(rests)})"))
    alternatives += [_prefix_at_end(stop) for stop in stops if len(stop) > 1]
    return re.compile("|".join(alternatives), re.DOTALL)


def _prefix_at_end(stop: str) -> str:
    """A proper prefix of `stop` that ends the text: its first character, then a look at the
    length left (one step), then the next characters spelled out up to `_SPELLED`; past them only
    the length is checked (the automaton decides), which keeps the pattern small."""
    cut = min(len(stop) - 1, _SPELLED)
    pattern = r"\Z" if cut == len(stop) - 1 else r".*+\Z"
    for char in reversed(stop[1:cut]):
        pattern = f"{re.escape(char)}(?:{pattern})|\\Z"
    return f"{re.escape(stop[0])}(?=.{{0,{len(stop) - 2}}}+\\Z)(?:{pattern})"
