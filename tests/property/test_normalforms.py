"""service.bpe.normalforms.normalize rebuilds only the lines that are not in the form, and gives
exactly `unicodedata.normalize` for every form: texts of line feeds, ASCII, precomposed and
decomposed letters, combining marks (also right after a line feed, and out of canonical order),
Hangul syllables and jamo, Devanagari with nukta, compatibility characters and CR LF."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.bpe.normalforms import Form, normalize

FORMS: list[Form] = ["NFC", "NFKC", "NFD", "NFKD"]
ALPHABET = [
    "\n", "\r", " ", "a", "e", "A", "1",
    "é", "e\u0301", "\u0301", "\u0327", "\u0323", "\u0302",  # marks, combining class 230/202/220
    "가", "\u1100", "\u1161", "\u11a8",  # a syllable, and leading/vowel/trailing jamo
    "क", "\u093c", "क़", "ि",  # Devanagari: a nukta, a letter that decomposes to one
    "\ufb01", "\u2460", "\uff21", "\u2126", "\u212b",  # compatibility and singleton decompositions
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join), st.sampled_from(FORMS))
def test_the_same_string_as_unicodedata(text: str, form: Form) -> None:
    assert normalize(form, text) == unicodedata.normalize(form, text)


LINE = st.lists(st.sampled_from([c for c in ALPHABET if c != "\n"]), min_size=16, max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE.map("".join), min_size=1, max_size=8).map("\n".join), st.sampled_from(FORMS))
def test_lines_long_enough_to_be_normalized_one_by_one(text: str, form: Form) -> None:
    assert normalize(form, text) == unicodedata.normalize(form, text)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "plain ascii\nlines\n",
        "a\n\u0301b",  # a mark right after a line feed composes with nothing before it
        "e\u0301\ncafe\u0301\n\nok",
        "\u1100\n\u1161",  # jamo split by a line feed stay apart
        "क\u093c" * 3 + "\n" + "क\u093c",
        "no line feed: e\u0301",
        "line ends\r\ne\u0301\r\n",
        "a line of more than sixteen characters: cafe\u0301\nand another one, in the form\n",
    ],
)
def test_edges(text: str, form: Form) -> None:
    assert normalize(form, text) == unicodedata.normalize(form, text)


def test_text_in_the_form_is_returned_as_is() -> None:
    text = "déjà vu\nनमस्ते\n"
    assert normalize("NFC", text) is text
