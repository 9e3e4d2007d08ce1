"""A conversation's prefix renderings, derived from one tracked rendering of the whole.

A breakdown needs the template's output for every prefix messages[:k] (no generation prompt).
The whole conversation is rendered once with the messages tracked (tracked_messages: each look
at them, and the namespaces' reads and writes, the only state the immutable sandbox lets a loop
change). Prefix k renders exactly as the whole does until the template looks at something prefix
k lacks. A `for` of the template over the messages that asks for message k ends there in prefix
k; when the whole's loop went on to its end, prefix k goes on from where that loop ended, without
the skipped iterations' output, as long as every namespace attribute read from then on holds in
prefix k the value it holds in the whole (or was written again first). Any other look at message
k or beyond (`loop.last` or `loop.nextitem` peeking at it, `messages[i + 1]`, the length, a
negative index, a filter running over the messages, a loop with nothing to do in prefix k)
leaves prefix k unproven: None, and the caller renders that prefix alone (the prefix method).
Templates that hold output back (macros, call, filter and set blocks, recursive loops) are not
tracked, since the position of their output is not known when a loop advances.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from service.errors import TemplateError
from service.models.breakdown.tracked_messages import (
    ALL,
    NEXT,
    READ,
    READ_ALL,
    SEE,
    WROTE,
    Abandoned,
    Record,
    TrackedMessages,
    trackable,
)
from service.models.chat import jinja

_MISSING = object()


@dataclass(frozen=True, slots=True)
class Rendering:
    """A prefix's rendering as spans of a tracked rendering (kept apart: n prefixes' texts at
    once would be about (n + 1) / 2 times the whole's)."""

    whole: str
    spans: tuple[tuple[int, int], ...]

    def text(self) -> str:
        return "".join(self.whole[a:b] for a, b in self.spans)


def prefix_renderings(
    source: str,
    variables: dict[str, Any],
    messages: list[dict[str, Any]],
    *,
    max_chars: int,
    seconds_left: Callable[[], float],
) -> list[Rendering | None]:
    """Each prefix's rendering (index k: messages[:k]) where a tracked rendering proves it, else
    None. A prefix whose state at its end differs from the whole's (DeepSeek's "in tool
    outputs") is proven by a tracked rendering of the longest prefix left unproven, and so on
    while a round proves more than the prefix it renders."""
    out: list[Rendering | None] = [None] * (len(messages) + 1)
    m = len(messages)
    while m > 0:
        tracked = render_tracked(
            source,
            variables,
            messages[:m],
            max_chars=max_chars,
            max_seconds=seconds_left(),
            check=seconds_left,
        )
        if tracked is None:
            break
        proven = 0
        for k, rendering in enumerate(tracked[1]):
            if rendering is not None and out[k] is None:
                out[k] = rendering
                proven += 1
        if proven < 2:  # no better than rendering the prefix alone
            break
        m = max((k for k in range(m) if out[k] is None), default=0)
    return out


def render_tracked(
    source: str,
    variables: dict[str, Any],
    messages: list[dict[str, Any]],
    *,
    max_chars: int,
    max_seconds: float,
    check: Callable[[], object] = lambda: None,
) -> tuple[str, list[Rendering | None]] | None:
    """The whole rendering and each prefix's (index k: messages[:k]; None: not proven), or None
    when the template is not trackable, the tracking gave up, or the tracked rendering failed
    (the template refuses the conversation, or refuses the tracked sequence: `tojson` of the
    messages): render the prefixes alone then. The limits are raised as by jinja.render;
    `check` is called before each prefix's derivation (a deadline's)."""
    if not trackable(source):
        return None
    log = Record(len(messages))
    token = jinja.OBSERVER.set(log)
    try:
        tracked = {**variables, "messages": TrackedMessages(messages, 0, log)}
        text = jinja.render(
            source, tracked, max_chars=max_chars, max_seconds=max_seconds, meter=log
        )
    except (Abandoned, TemplateError):
        return None
    finally:
        jinja.OBSERVER.reset(token)
    return text, _derive(log, text, check)


def _derive(log: Record, text: str, check: Callable[[], object]) -> list[Rendering | None]:
    events, n = log.events, log.n
    ends: dict[int, int] = {}  # loop -> the event of its end (asking for message n)
    first_look = [len(events)] * n  # prefix k -> its first event that looks at message >= k
    done = -1
    for i, event in enumerate(events):
        kind = event[0]
        if kind == NEXT and event[2] >= n:
            ends[event[1]] = i
        if kind in (SEE, NEXT, ALL):
            j = min(event[1] if kind == SEE else event[2] if kind == NEXT else n - 1, n - 1)
            for k in range(done + 1, j + 1):
                first_look[k] = i
            done = max(done, j)
    looks = [len(events)] * (len(events) + 1)  # event i -> the first look at messages from i
    for i in range(len(events) - 1, -1, -1):
        looks[i] = i if events[i][0] in (SEE, NEXT, ALL) else looks[i + 1]
    out: list[Rendering | None] = []
    for k in range(n):
        check()
        out.append(_prefix(events, looks, ends, text, k=k, i=first_look[k]))
    return [*out, Rendering(text, ((0, len(text)),))]


def _prefix(
    events: list[tuple[Any, ...]],
    looks: list[int],
    ends: dict[int, int],
    text: str,
    *,
    k: int,
    i: int,
) -> Rendering | None:
    """Prefix k's output: the whole's, without the iterations its loops skip; None unproven."""
    changed: dict[tuple[int, str], Any] = {}  # prefix k's values that are not the whole's
    kept: list[tuple[int, int]] = []
    since = 0  # where the output prefix k keeps resumed
    while i < len(events):
        if not changed:  # namespace reads and writes change nothing: on to the next look
            i = looks[i]
            if i == len(events):
                break
        event = events[i]
        kind = event[0]
        if kind == READ:
            if event[1] in changed:
                return None
        elif kind == WROTE:
            changed.pop(event[1], None)
        elif kind == READ_ALL:
            if any(key[0] == event[1] for key in changed):
                return None
        elif kind == SEE:
            if event[1] >= k:
                return None
        elif kind == ALL:
            return None
        elif event[2] >= k:  # NEXT: the loop ends here in prefix k
            _, loop, _, first, at, values = event
            end = ends.get(loop)
            if first >= k or end is None:  # nothing to do in prefix k (`else`?), or a `break`
                return None
            _, _, _, _, resume, after = events[end]
            kept.append((since, at))
            since = resume
            for key in values.keys() | after.keys():
                mine = changed.get(key, values.get(key, _MISSING))
                if _same(mine, after.get(key, _MISSING)):
                    changed.pop(key, None)
                else:
                    changed[key] = mine
            i = end
        i += 1
    kept.append((since, len(text)))
    return Rendering(text, tuple(kept))


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # a value that cannot compare is not the same
        return False
