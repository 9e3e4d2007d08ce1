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
ASCII text is in every form.
"""

from __future__ import annotations

import functools
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


@functools.cache
def decompositions(form: Form) -> dict[int, str]:
    """Every code point whose `form` (NFD or NFKD) is another string -> that string (a table for
    str.translate; made once a form, in about 0.15 s, when a text first needs it)."""
    table = {}
    for cp in range(0x110000):
        c = chr(cp)
        decomposes = unicodedata.decomposition(c) or 0xAC00 <= cp <= 0xD7A3  # Hangul: algorithmic
        if decomposes and (full := unicodedata.normalize(form, c)) != c:
            table[cp] = full
    return table
