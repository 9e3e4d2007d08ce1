"""service.bpe.pipeline.normal_forms.normalize through the native scan of spans equals
`unicodedata.normalize`
(NFC, NFKC) for every code point (U+0000..U+10FFFF, surrogates excluded) in every context below:
after a letter that composes, a leading jamo, a syllable, a mark, a nukta, a vowel jamo; before
a mark, a vowel or trailing jamo, a nukta; and next to the code points around it. Many code
points per call (x + c + y for each c, one after another: what the scan gets wrong for c shows
whatever is next to it, as the reference sees the same string), and where a block differs, each
code point of it alone, to name the first one that differs. About 10 s: 26 strings of 3.3 million
characters for `unicodedata`."""

from __future__ import annotations

import unicodedata

import pytest

from service.bpe.pipeline import normal_forms
from service.bpe.pipeline.normal_forms import Form, normalize

pytestmark = pytest.mark.skipif(normal_forms.SPANS is None, reason="no native scan of spans")

CONTEXTS = [  # (before, after) each code point
    ("", ""),  # the code points around it
    ("a", "a"),  # a letter that composes with most marks, and a boundary
    ("\u1100", "a"),  # a leading jamo: a vowel jamo composes with it
    ("\uac00", "a"),  # a syllable of two jamo: a trailing jamo composes with it
    ("e\u0301", "a"),  # a mark of class 230: a mark of a lower class goes before it
    ("\u0301", "a"),
    ("\u093c", "a"),  # a nukta: class 7, composes after न र ळ
    ("\u1161", "a"),
    ("a", "\u0301"),  # a letter or a compatibility character ending in one composes with it
    ("a", "\u1161"),  # a leading jamo (also U+3131's NFKC) composes with it
    ("a", "\u11a8"),  # a syllable of two jamo composes with it
    ("a", "\u093c"),
    ("\u0915", "\u093c"),
]
BLOCK = 0x1000
FORMS: list[Form] = ["NFC", "NFKC"]


def code_points() -> list[str]:
    return [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def first_difference(form: Form, before: str, after: str, chars: list[str]) -> str | None:
    for lo in range(0, len(chars), BLOCK):
        block = chars[lo : lo + BLOCK]
        text = before + (after + before).join(block) + after
        if normalize(form, text) != unicodedata.normalize(form, text):
            for c in block:
                one = before + c + after
                if normalize(form, one) != unicodedata.normalize(form, one):
                    return f"U+{ord(c):04X} between {before!r} and {after!r}"
            return f"U+{ord(block[0]):04X}..U+{ord(block[-1]):04X} between {before!r} and {after!r}"
    return None


@pytest.mark.parametrize(("before", "after"), CONTEXTS)
def test_every_code_point_in_context(before: str, after: str) -> None:
    chars = code_points()
    text = before + (after + before).join(chars) + after
    for form in FORMS:
        if normalize(form, text) != unicodedata.normalize(form, text):
            pytest.fail(f"{form}: {first_difference(form, before, after, chars)}")
