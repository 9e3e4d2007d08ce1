"""A conversation's prefix renderings, derived from one tracked rendering of the whole.

A breakdown needs the template's output for every prefix messages[:k] (no generation prompt).
The whole conversation is rendered once with `messages` a sequence that records each look at it,
and namespaces that report their reads and writes (the only state the immutable sandbox lets a
loop change). Prefix k renders exactly as the whole does until the template looks at something
prefix k lacks. A `for` of the template over the messages that asks for message k ends there in
prefix k; when the whole's loop went on to its end, prefix k goes on from where that loop ended,
without the skipped iterations' output, as long as every namespace attribute read from then on
holds in prefix k the value it holds in the whole (or was written again first). Any other look at
message k or beyond (`loop.last` or `loop.nextitem` peeking at it, `messages[i + 1]`, the
length, a negative index, a filter or test running over the messages, a loop with nothing to do
in prefix k) leaves prefix k unproven: None, and the caller renders that prefix alone (the prefix
method). Templates that hold output back (macros, call, filter and set blocks, recursive loops)
are not tracked, since the position of their output is not known when a loop advances.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.nodes
import jinja2.runtime

from service.errors import TemplateError
from service.models import jinja_chat

_ALL, _SEE, _NEXT, _READ, _WROTE, _READ_ALL = range(6)  # kinds of event
_MISSING = object()
_LOOP_NEXT = jinja2.runtime.LoopContext.__next__.__code__
_HOLDS_OUTPUT = (jinja2.nodes.Macro, jinja2.nodes.CallBlock, jinja2.nodes.FilterBlock,
                 jinja2.nodes.AssignBlock, jinja2.nodes.Block, jinja2.nodes.Extends,
                 jinja2.nodes.Include, jinja2.nodes.Import, jinja2.nodes.FromImport)  # fmt: skip


class Abandoned(Exception):  # noqa: N818 (not an error: the tracking gives up)
    """No prefix can be derived any more: the tracked rendering is stopped."""


@lru_cache(maxsize=32)
def trackable(source: str) -> bool:
    """Whether every output of the template is yielded as it is made (no construct that holds
    output back), so a loop's advance can be placed in the output."""
    tree = jinja_chat.compile_template(source).environment.parse(source)
    if any(True for _ in tree.find_all(_HOLDS_OUTPUT)):
        return False
    return not any(loop.recursive for loop in tree.find_all(jinja2.nodes.For))


class _Log:
    """What the template looked at, in order, and where its output stood."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.size = 0  # characters output so far (jinja_chat.render keeps it current)
        self.events: list[tuple[Any, ...]] = []
        self.values: dict[tuple[int, str], Any] = {}  # (namespace, attribute) -> value now
        self.namespaces: list[object] = []  # held, so that their ids stay theirs
        self.loops = 0
        self.open_loops = 0  # template loops over the messages begun and not ended

    def see_all(self) -> None:
        if self.open_loops == 0:  # no loop a prefix could skip can hide this look
            raise Abandoned
        self.events.append((_ALL,))

    def see(self, j: int) -> None:
        self.events.append((_SEE, j))

    def advance(self, loop: int, j: int, first: int) -> None:
        self.events.append((_NEXT, loop, j, first, self.size, dict(self.values)))

    def created(self, ns: object, attrs: dict[str, Any]) -> None:
        self.namespaces.append(ns)
        for name, value in attrs.items():
            self.wrote(ns, name, value)

    def read(self, ns: object, name: str) -> None:
        self.events.append((_READ, (id(ns), name)))

    def wrote(self, ns: object, name: str, value: Any) -> None:
        self.values[id(ns), name] = value
        self.events.append((_WROTE, (id(ns), name)))

    def read_all(self, ns: object) -> None:
        self.events.append((_READ_ALL, id(ns)))


class _Messages:
    """messages[start:] as the template sees it, every look recorded."""

    __slots__ = ("_items", "_log", "_start")

    def __init__(self, items: list[dict[str, Any]], start: int, log: _Log) -> None:
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
                return _Messages(self._items, self._start + (index.start or 0), self._log)
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

    def __init__(self, items: list[dict[str, Any]], start: int, log: _Log, loop: int) -> None:
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


def prefix_renderings(
    source: str, variables: dict[str, Any], messages: list[dict[str, Any]], *, max_chars: int,
    seconds_left: Callable[[], float],
) -> list[str | None]:  # fmt: skip
    """Each prefix's rendering (index k: messages[:k]) where a tracked rendering proves it, else
    None. A prefix whose state at its end differs from the whole's (DeepSeek's "in tool
    outputs") is proven by a tracked rendering of the longest prefix left unproven, and so on
    while a round proves more than the prefix it renders."""
    out: list[str | None] = [None] * (len(messages) + 1)
    m = len(messages)
    while m > 0:
        tracked = render_tracked(source, variables, messages[:m], max_chars=max_chars,
                                 max_seconds=seconds_left(), check=seconds_left)  # fmt: skip
        if tracked is None:
            break
        proven = 0
        for k, text in enumerate(tracked[1]):
            if text is not None and out[k] is None:
                out[k] = text
                proven += 1
        if proven < 2:  # no better than rendering the prefix alone
            break
        m = max((k for k in range(m) if out[k] is None), default=0)
    return out


def render_tracked(
    source: str, variables: dict[str, Any], messages: list[dict[str, Any]], *, max_chars: int,
    max_seconds: float, check: Callable[[], object] = lambda: None,
) -> tuple[str, list[str | None]] | None:  # fmt: skip
    """The whole rendering and each prefix's (index k: messages[:k]; None: not proven), or None
    when the template is not trackable, the tracking gave up, or the tracked rendering failed
    (the template refuses the conversation, or refuses the tracked sequence: `tojson` of the
    messages): render the prefixes alone then. The limits are raised as by jinja_chat.render;
    `check` is called before each prefix's derivation (a deadline's)."""
    if not trackable(source):
        return None
    log = _Log(len(messages))
    token = jinja_chat.OBSERVER.set(log)
    try:
        text = jinja_chat.render(source, {**variables, "messages": _Messages(messages, 0, log)},
                                 max_chars=max_chars, max_seconds=max_seconds,
                                 meter=log)  # fmt: skip
    except (Abandoned, TemplateError):
        return None
    finally:
        jinja_chat.OBSERVER.reset(token)
    return text, _derive(log, text, check)


def _derive(log: _Log, text: str, check: Callable[[], object]) -> list[str | None]:
    events, n = log.events, log.n
    ends: dict[int, int] = {}  # loop -> the event of its end (asking for message n)
    first_look = [len(events)] * n  # prefix k -> its first event that looks at message >= k
    done = -1
    for i, event in enumerate(events):
        kind = event[0]
        if kind == _NEXT and event[2] >= n:
            ends[event[1]] = i
        if kind in (_SEE, _NEXT, _ALL):
            j = min(event[1] if kind == _SEE else event[2] if kind == _NEXT else n - 1, n - 1)
            for k in range(done + 1, j + 1):
                first_look[k] = i
            done = max(done, j)
    looks = [len(events)] * (len(events) + 1)  # event i -> the first look at messages from i
    for i in range(len(events) - 1, -1, -1):
        looks[i] = i if events[i][0] in (_SEE, _NEXT, _ALL) else looks[i + 1]
    out: list[str | None] = []
    for k in range(n):
        check()
        out.append(_prefix(events, looks, ends, text, k=k, i=first_look[k]))
    return [*out, text]


def _prefix(events: list[tuple[Any, ...]], looks: list[int], ends: dict[int, int], text: str,
            *, k: int, i: int) -> str | None:  # fmt: skip
    """Prefix k's output: the whole's, without the iterations its loops skip; None unproven."""
    changed: dict[tuple[int, str], Any] = {}  # prefix k's values that are not the whole's
    kept: list[str] = []
    since = 0  # where the output prefix k keeps resumed
    while i < len(events):
        if not changed:  # namespace reads and writes change nothing: on to the next look
            i = looks[i]
            if i == len(events):
                break
        event = events[i]
        kind = event[0]
        if kind == _READ:
            if event[1] in changed:
                return None
        elif kind == _WROTE:
            changed.pop(event[1], None)
        elif kind == _READ_ALL:
            if any(key[0] == event[1] for key in changed):
                return None
        elif kind == _SEE:
            if event[1] >= k:
                return None
        elif kind == _ALL:
            return None
        elif event[2] >= k:  # _NEXT: the loop ends here in prefix k
            _, loop, _, first, at, values = event
            end = ends.get(loop)
            if first >= k or end is None:  # nothing to do in prefix k (`else`?), or a `break`
                return None
            _, _, _, _, resume, after = events[end]
            kept.append(text[since:at])
            since = resume
            for key in values.keys() | after.keys():
                mine = changed.get(key, values.get(key, _MISSING))
                if _same(mine, after.get(key, _MISSING)):
                    changed.pop(key, None)
                else:
                    changed[key] = mine
            i = end
        i += 1
    kept.append(text[since:])
    return "".join(kept)


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # a value that cannot compare is not the same
        return False
