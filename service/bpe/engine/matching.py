"""How a pre-tokenization pattern cuts text into pieces: its matches, each match whole, under a
time bound where the pattern comes from a file.

A group in a pattern captures nothing here: `regex`'s `findall` answers a pattern's groups
instead of its matches when it has any (`(\\w+)|\\s+|.` would cut "hello world" into "hello", "",
"world", dropping the space), so a pattern with groups is applied by `finditer`, each match
taken whole. A pattern without groups keeps `findall`, which is faster.

A pattern from a file is untrusted input: `(a|aa)+$` backtracks exponentially on 40 "a"s. Such a
pattern runs with `regex`'s timeout, the time left of the work's deadline
(service/bpe/deadline.py) or `NO_DEADLINE_SECONDS` for work that has none (a small request, run
inline), and raises `PatternTimeoutError` past it, or the work's own `LimitExceededError` when
the time was the work's deadline (a sane pattern on megabytes of text); `stalls` refuses one at
import. The timeout makes `findall` about 3x slower, so the shipped patterns (`KNOWN`) run
without it.
"""

from __future__ import annotations

from collections.abc import Callable

import regex

from service.bpe.deadline import checkpoint, seconds_left
from service.bpe.engine.patterns import DEEPSEEK_CHAIN, PATTERNS
from service.errors import PatternTimeoutError

Cut = Callable[[str], list[str]]
KNOWN = frozenset([*PATTERNS.values(), *DEEPSEEK_CHAIN])
NO_DEADLINE_SECONDS = 2.0
PROBE_SECONDS = 0.05  # a sane pattern cuts each probe in microseconds
STALLS = f"backtracks for over {PROBE_SECONDS:g} s on a 41-character text (e.g. 'a' * 40 + '!')"
PROBES = (*(c * 40 + "!" for c in ("a", " ", "1", "aA", "\n", "a ", "-")), "a" * 40)


def matches_of(pattern: str) -> Cut:
    """The pieces `pattern` cuts a text into: its matches, whole, in order."""
    compiled = regex.compile(pattern)
    if pattern in KNOWN and not compiled.groups:
        findall: Cut = compiled.findall
        return findall
    finditer = compiled.finditer
    grouped = bool(compiled.groups)

    def timed(text: str) -> list[str]:
        seconds = seconds_left(NO_DEADLINE_SECONDS)
        try:
            if grouped:
                return [m.group() for m in finditer(text, timeout=seconds)]
            found: list[str] = compiled.findall(text, timeout=seconds)
            return found
        except TimeoutError:
            raise timed_out(seconds) from None

    return timed


def timed_finditer(compiled: regex.Pattern[str], text: str) -> list[regex.Match[str]]:
    """`compiled`'s matches in `text` under the work's time bound (a file's Split pattern)."""
    seconds = seconds_left(NO_DEADLINE_SECONDS)
    try:
        return list(compiled.finditer(text, timeout=seconds))
    except TimeoutError:
        raise timed_out(seconds) from None


def timed_out(seconds: float) -> PatternTimeoutError:
    """The error for a pattern stopped after `seconds`, unless the work's time is up (raised)."""
    checkpoint()
    return PatternTimeoutError(seconds)


def stalls(pattern: str) -> bool:
    """Whether `pattern` backtracks past `PROBE_SECONDS` on one of a few adversarial texts."""
    if pattern in KNOWN:
        return False
    compiled = regex.compile(pattern)
    try:
        for probe in PROBES:
            compiled.findall(probe, timeout=PROBE_SECONDS)
    except TimeoutError:
        return True
    return False
