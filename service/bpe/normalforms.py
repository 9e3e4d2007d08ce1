"""Unicode normalization (NFC, NFKC, NFD, NFKD) of a text, done only where the text needs it.

`unicodedata.normalize` rebuilds the whole text as soon as one character is not in the form.
A line feed is a stable character in every form (combining class 0, its own normal form, and it
composes with nothing on either side), so a text's normal form is its lines' normal forms joined
by line feeds, and the lines already in the form are kept as they are: a long text with a few
such lines (real Hindi) costs half. A line costs a call, so a text of short lines (under
MIN_LINE characters on average) is normalized whole, as is a text of one line, and so are the
decomposed forms (NFD, NFKD), which are cheap to build whole; then no text costs more than about
twice what it did (docs/performance.md). ASCII text is in every form.
"""

from __future__ import annotations

import unicodedata
from typing import Literal

Form = Literal["NFC", "NFKC", "NFD", "NFKD"]
MIN_LINE = 16  # characters a line, on average, for the text to be normalized line by line


def normalize(form: Form, text: str) -> str:
    """`unicodedata.normalize(form, text)`, the same string, rebuilt line by line."""
    if text.isascii() or unicodedata.is_normalized(form, text):
        return text
    breaks = text.count("\n")
    if form in ("NFD", "NFKD") or not breaks or breaks * MIN_LINE > len(text):
        return unicodedata.normalize(form, text)
    # normalize() returns a line its quick check finds in the form as it is, without a copy
    return "\n".join(unicodedata.normalize(form, line) for line in text.split("\n"))
