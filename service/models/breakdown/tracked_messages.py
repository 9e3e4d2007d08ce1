"""The messages as a template sees them in a tracked rendering: every look at them recorded.

`TrackedMessages` stands for the conversation's list (messages[start:], as slicing `[1:]` gives)
and records, in order, with the characters output so far: a template `for` asking for message j
(NEXT: its own loop, or its LoopContext advancing), any other look at whether message j exists or
what it is (SEE: an index, `loop.last` or `loop.nextitem` peeking, a filter or method iterating),
and a look at all of them (ALL: the length, a negative index, reversing, printing, comparing).
`Record` also takes the namespaces' creations, reads and writes (jinja.OBSERVER). A look at
all of them outside any template loop over the messages stops the rendering (`Abandoned`): no
prefix could be derived past it. Anything the tracked list does not do as a list does (`tojson`,
`+`) fails the rendering, and the caller renders the prefixes alone.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.nodes
import jinja2.runtime

from service.models.chat import jinja

ALL, SEE, NEXT, READ, WROTE, READ_ALL = range(6)  # kinds of event
_LOOP_NEXT = jinja2.runtime.LoopContext.__next__.__code__
_HOLDS_OUTPUT = (
    jinja2.nodes.Macro,
    jinja2.nodes.CallBlock,
    jinja2.nodes.FilterBlock,
    jinja2.nodes.AssignBlock,
    jinja2.nodes.Block,
    jinja2.nodes.Extends,
    jinja2.nodes.Include,
    jinja2.nodes.Import,
    jinja2.nodes.FromImport,
)


class Abandoned(Exception):  # noqa: N818 (not an error: the tracking gives up)
    """No prefix can be derived any more: the tracked rendering is stopped."""


@lru_cache(maxsize=32)
def trackable(source: str) -> bool:
    """Whether every output of the template is yielded as it is made (no construct that holds
    output back), so a loop's advance can be placed in the output."""
    tree = jinja.compile_template(source).environment.parse(source)
    if any(True for _ in tree.find_all(_HOLDS_OUTPUT)):
        return False
    return not any(loop.recursive for loop in tree.find_all(jinja2.nodes.For))


class Record:
    """What the template looked at, in order, and where its output stood."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.size = 0  # characters output so far (jinja.render keeps it current)
        self.events: list[tuple[Any, ...]] = []
        self.values: dict[tuple[int, str], Any] = {}  # (namespace, attribute) -> value now
        self.namespaces: list[object] = []  # held, so that their ids stay theirs
        self.loops = 0
        self.open_loops = 0  # template loops over the messages begun and not ended

    def see_all(self) -> None:
        if self.open_loops == 0:  # no loop a prefix could skip can hide this look
            raise Abandoned
        self.events.append((ALL,))

    def see(self, j: int) -> None:
        self.events.append((SEE, j))

    def advance(self, loop: int, j: int, first: int) -> None:
        self.events.append((NEXT, loop, j, first, self.size, dict(self.values)))

    def created(self, ns: object, attrs: dict[str, Any]) -> None:
        self.namespaces.append(ns)
        for name, value in attrs.items():
            self.wrote(ns, name, value)

    def read(self, ns: object, name: str) -> None:
        self.events.append((READ, (id(ns), name)))

    def wrote(self, ns: object, name: str, value: Any) -> None:
        self.values[id(ns), name] = value
        self.events.append((WROTE, (id(ns), name)))

    def read_all(self, ns: object) -> None:
        self.events.append((READ_ALL, id(ns)))


class TrackedMessages:
    """messages[start:] as the template sees it, every look recorded."""

    __slots__ = ("_items", "_log", "_start")

    def __init__(self, items: list[dict[str, Any]], start: int, log: Record) -> None:
        self._items: list[dict[str, Any]] = items
        self._start = start
        self._log = log

    def __len__(self) -> int:
        self._log.see_all()
        return max(len(self._items) - self._start, 0)

    def __bool__(self) -> bool:
        self._log.see(self._start)
        return self._start < len(self._items)

    def __getitem__(self, index: object) -> Any:
        if isinstance(index, slice):
            if index.stop is None and index.step is None and (index.start or 0) >= 0:
                return TrackedMessages(self._items, self._start + (index.start or 0), self._log)
            self._log.see_all()
            return self._items[self._start :][index]
        if not isinstance(index, int):
            raise TypeError(f"list indices must be integers or slices, not {type(index).__name__}")
        if index < 0:
            self._log.see_all()
            return self._items[self._start :][index]
        self._log.see(self._start + index)
        return self._items[self._start + index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._log.loops += 1
        return _Iterator(self._items, self._start, self._log, self._log.loops)

    def __reversed__(self) -> Iterator[dict[str, Any]]:
        self._log.see_all()
        return iter(self._items[self._start :][::-1])

    def __contains__(self, item: object) -> bool:
        self._log.see_all()
        return item in self._items[self._start :]

    def __eq__(self, other: object) -> bool:
        self._log.see_all()
        return self._items[self._start :] == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # a list's

    def __repr__(self) -> str:  # `{{ messages }}`, `|string`, `|pprint`: the list's text
        self._log.see_all()
        return repr(self._items[self._start :])


class _Iterator:
    __slots__ = ("_first", "_items", "_log", "_loop", "_next")

    def __init__(self, items: list[dict[str, Any]], start: int, log: Record, loop: int) -> None:
        self._items, self._first, self._next, self._log, self._loop = items, start, start, log, loop

    def __iter__(self) -> _Iterator:
        return self

    def __next__(self) -> dict[str, Any]:
        j = self._next
        log = self._log
        if _template_advances(sys._getframe(1)):
            if j == self._first:
                log.open_loops += 1
            log.advance(self._loop, j, self._first)
            if j >= len(self._items):
                log.open_loops -= 1
        else:  # a peek (`loop.last`), a filter, a test: it learns whether message j exists
            log.see(j)
        if j >= len(self._items):
            raise StopIteration
        self._next = j + 1
        return self._items[j]


def _template_advances(frame: Any) -> bool:
    """Whether the template's own `for` asks (directly, or through its LoopContext; a loop
    filter's generator in between), not a peek, a filter or a method."""
    while frame.f_code.co_name == "<genexpr>" and frame.f_code.co_filename == "<template>":
        frame = frame.f_back
    if frame.f_code is _LOOP_NEXT:
        frame = frame.f_back
    return bool(frame.f_code.co_filename == "<template>" and frame.f_code.co_name == "root")
