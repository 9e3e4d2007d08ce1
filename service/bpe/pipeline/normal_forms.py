"""Unicode normalization (NFC, NFKC, NFD, NFKD) of a text, done only where the text needs it.

`unicodedata.normalize` rebuilds the whole text as soon as one character is not in the form.
For NFC and NFKC, a character of combining class 0 whose quick check (UAX #15) is YES is a
boundary: nothing before it composes or reorders with it, so a text's normal form is the normal
forms of the stretches between boundaries, joined. The native extension's scan
(service/bpe/csrc/normal_spans.h, over the str's own storage) finds the spans that may change:
from the boundary before a character whose quick check is not YES (or a mark out of canonical
order) to the boundary after it, spans a few characters apart made one. A MAYBE mark right after
a letter without a decomposition that it does not compose with is in the form as it is (a nukta
after most Devanagari letters) and makes no span. Only the spans go through `unicodedata`; the
rest of the text is kept, and a text in the form is returned itself. The scan's tables are
generated from `unicodedata` (service/bpe/csrc/gen_normal_tables.py) and used only under the
Unicode version they were made from (`SPANS` is None otherwise, or without the extension).

A span with more than LONG_RUN characters in a row that are no boundary (combining marks, say)
has its runs of marks put in canonical order here before `unicodedata` sees it: CPython orders
them by an insertion sort, whose cost grows with the square of a run that is out of order (half
a MB of two alternating marks took 52 s, the worker's event loop blocked all along). The span is
fully decomposed (`str.translate` with each character's decomposition), each run of non-starters
sorted by class in C (stably, which is what canonical ordering is), and `unicodedata` then
composes a text already in order, in linear time; the result is the same string.

Otherwise, and for the decomposed forms (NFD, NFKD, cheap to build whole), `by_lines`: a line feed
is a stable character in every form, so a text's normal form is its lines' normal forms joined by
line feeds, and the lines already in the form are kept. A line costs a call, so a text of short
lines (under MIN_LINE characters on average) is normalized whole, as is a text of one line.
ASCII text is in every form. A text with more than LONG_RUN characters in a row that decompose
to non-starters only is ordered in Python first (`in_order`: the same decomposition, each run of
two or more non-starters sorted by `unicodedata.combining` with `sorted`, which is stable), so
this way too is linear where CPython's ordering is quadratic (without the extension, 128 KB of
two alternating marks took 3.3 s).

The tables these orderings need (`decompositions`, ~0.1 s a form, and for `by_lines` also
`mark_runs`, ~0.08 s) are made once a process by `prepare`, which loading a tokenizer calls for
the forms it uses, in its own thread; a request does not wait for them on the event loop.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from typing import Literal

try:
    from service.bpe import _native
except ImportError:  # built without a C compiler
    _native = None  # type: ignore[assignment]

Form = Literal["NFC", "NFKC", "NFD", "NFKD"]
MIN_LINE = 16  # characters a line, on average, for the text to be normalized line by line
LONG_RUN = 32  # characters in a row that are no boundary, from which a span is ordered here
DECOMPOSED: dict[Form, Form] = {"NFC": "NFD", "NFKC": "NFKD", "NFD": "NFD", "NFKD": "NFKD"}

# normal_parts(form, text): None if text is in NFC (NFKC), else [kept, span, kept, ..., kept]
SPANS: Callable[[str, str], list[str] | None] | None = (
    _native.normal_parts
    if _native is not None and unicodedata.unidata_version == _native.NORMAL_UNICODE_VERSION
    else None
)


def normalize(form: Form, text: str) -> str:
    """`unicodedata.normalize(form, text)`, the same string, rebuilt only where it changes."""
    if text.isascii():
        return text
    if SPANS is not None and form in ("NFC", "NFKC"):
        return by_spans(SPANS, form, text)
    return by_lines(form, text)


def by_spans(spans: Callable[[str, str], list[str] | None], form: Form, text: str) -> str:
    """Only the spans the scan finds normalized (NFC or NFKC)."""
    parts = spans(form, text)
    if parts is None:
        return text
    parts[1::2] = [normalize_span(form, span) for span in parts[1::2]]
    return "".join(parts)


def by_lines(form: Form, text: str) -> str:
    """Only the lines not in the form normalized (or the whole text, see above)."""
    if text.isascii() or unicodedata.is_normalized(form, text):
        return text
    if len(text) > LONG_RUN and mark_runs(form)[0].search(text) is not None:
        return in_order(form, text)
    breaks = text.count("\n")
    if form in ("NFD", "NFKD") or not breaks or breaks * MIN_LINE > len(text):
        return unicodedata.normalize(form, text)
    # normalize() returns a line its quick check finds in the form as it is, without a copy
    return "\n".join(unicodedata.normalize(form, line) for line in text.split("\n"))


def normalize_span(form: Form, span: str) -> str:
    """`unicodedata.normalize(form, span)`, a span with long runs of marks ordered first."""
    if len(span) > LONG_RUN and _native.normal_longest_run(form, span) > LONG_RUN:
        span = ordered(form, span)
    return unicodedata.normalize(form, span)


def ordered(form: Form, text: str) -> str:
    """The full decomposition of `text` (canonical for NFC and NFD, compatibility for the K
    forms) with every run of non-starters in canonical order, in linear time: what `unicodedata`
    makes of `text` before it composes."""
    return _native.normal_ordered(text.translate(decompositions(DECOMPOSED[form])))


def in_order(form: Form, text: str) -> str:
    """`unicodedata.normalize(form, text)` in linear time without the extension: the full
    decomposition, every run of non-starters sorted by class here (stably, as canonical ordering
    is), then composed by `unicodedata` (NFC, NFKC), which finds it in order."""
    runs = mark_runs(form)[1]
    decomposed = runs.sub(_sorted_run, text.translate(decompositions(DECOMPOSED[form])))
    return decomposed if form in ("NFD", "NFKD") else unicodedata.normalize(form, decomposed)


def _sorted_run(run: re.Match[str]) -> str:
    return "".join(sorted(run[0], key=unicodedata.combining))


def prepare(form: Form) -> None:
    """Make now the tables a long run of marks in `form` needs on this build's way (once a
    process: about 0.1 s by spans, 0.2 s by lines): a tokenizer that normalizes calls it as it
    loads, so that no request makes them."""
    decompositions(DECOMPOSED[form])
    if SPANS is None or form not in ("NFC", "NFKC"):  # by_lines looks for long runs first
        mark_runs(form)


@functools.cache
def mark_runs(form: Form) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(more than LONG_RUN characters in a row whose decomposition in `form` is non-starters only;
    two or more non-starters in a row)."""
    table = decompositions(DECOMPOSED[form])
    nonstarters = _nonstarters()
    marks = {cp for cp in nonstarters if cp not in table}
    marks |= {cp for cp, full in table.items() if all(ord(c) in nonstarters for c in full)}
    return (
        re.compile(f"[{_char_class(sorted(marks))}]{{{LONG_RUN + 1},}}"),
        re.compile(f"[{_char_class(sorted(nonstarters))}]{{2,}}"),
    )


@functools.cache
def _nonstarters() -> frozenset[int]:
    """Every code point of a combining class other than 0 (what canonical ordering sorts)."""
    return frozenset(cp for cp in range(0x110000) if unicodedata.combining(chr(cp)))


def _char_class(code_points: list[int]) -> str:
    """The inside of a regex class matching exactly `code_points` (ascending), as ranges."""
    ranges: list[list[int]] = []
    for cp in code_points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


@functools.cache
def decompositions(form: Form) -> dict[int, str]:
    """Every code point whose `form` (NFD or NFKD) is another string -> that string (a table for
    str.translate; made once a form, in about 0.13 s, by `prepare`)."""
    table = {}
    for cp in range(0x110000):
        c = chr(cp)
        decomposes = unicodedata.decomposition(c) or 0xAC00 <= cp <= 0xD7A3  # Hangul: algorithmic
        if decomposes and (full := unicodedata.normalize(form, c)) != c:
            table[cp] = full
    return table
