"""service.bpe.pipeline.normal_forms.normalize gives exactly `unicodedata.normalize` for every
form, through
the native scan of spans (NFC, NFKC) and through the line-by-line way (the fallback, and NFD,
NFKD): texts of line feeds, ASCII, precomposed and decomposed letters, combining marks (also
right after a line feed, and out of canonical order), Hangul syllables and jamo, Devanagari with
nukta, compatibility characters and CR LF, in 1-, 2- and 4-byte strings. The scan's spans start
and end where the text may be cut, and what it keeps is in the form. Every code point in every
context: tests/slow/test_normalforms.py."""

from __future__ import annotations

import importlib
import unicodedata
from itertools import accumulate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.bpe import PythonEngine, Tokenizer, Vocabulary
from service.bpe.engine import native
from service.bpe.pipeline import normal_forms, normalizers
from service.bpe.pipeline.normal_forms import Form, by_lines, normalize

FORMS: list[Form] = ["NFC", "NFKC", "NFD", "NFKD"]
COMPOSED: list[Form] = ["NFC", "NFKC"]
ALPHABET = [
    "\n",
    "\r",
    " ",
    "a",
    "e",
    "A",
    "1",
    "\u00a0",
    "\u00aa",
    "\u00e9",
    "\u00ff",  # Latin-1
    "é",
    "e\u0301",
    "\u0301",
    "\u0327",
    "\u0323",
    "\u0302",
    "\u0316",  # marks, classes 230/202/220
    "\u0340",
    "\u0344",
    "\u0f73",
    "\u0f71",
    "\u0f72",  # singleton, non-starter decompositions
    "가",
    "각",
    "\u1100",
    "\u1161",
    "\u11a8",
    "\u3131",
    "\u314f",  # Hangul syllables, jamo
    "क",
    "न",
    "\u093c",
    "क़",
    "ऩ",
    "ि",
    "\u094d",  # Devanagari: nukta, an excluded and a
    "\u0b47",
    "\u0b3e",
    "\u0b57",
    "\u0cc6",
    "\u0cc2",
    "\u0cd5",  # primary composite; vowels
    "\ufb01",
    "\u2460",
    "\uff21",
    "\u2126",
    "\u212b",
    "\uff76",
    "\uff9e",  # compatibility,
    "\u3099",
    "\u309b",
    "\u304b",
    "\u0654",
    "\u06d5",
    "\u0627",  # singletons; kana and Arabic
    "\U0001d15e",
    "\U0001d165",
    "\U00011099",
    "\U000110ba",
    "\U0002f800",
    "😀",  # astral
]
TEXTS = st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join)
native_only = pytest.mark.skipif(normal_forms.SPANS is None, reason="no native scan of spans")


def test_the_native_scan_is_used_where_built() -> None:
    if native.AVAILABLE:
        assert normal_forms.SPANS is not None, "native tables of another Unicode version"


@settings(max_examples=400, deadline=None)
@given(TEXTS, st.sampled_from(FORMS))
def test_the_same_string_as_unicodedata(text: str, form: Form) -> None:
    assert normalize(form, text) == unicodedata.normalize(form, text)
    assert by_lines(form, text) == unicodedata.normalize(form, text)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=60), st.sampled_from(FORMS))
def test_any_text_as_unicodedata(text: str, form: Form) -> None:
    assert normalize(form, text) == unicodedata.normalize(form, text)


LINE = st.lists(st.sampled_from([c for c in ALPHABET if c != "\n"]), min_size=16, max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE.map("".join), min_size=1, max_size=8).map("\n".join), st.sampled_from(FORMS))
def test_lines_long_enough_to_be_normalized_one_by_one(text: str, form: Form) -> None:
    assert normalize(form, text) == unicodedata.normalize(form, text)
    assert by_lines(form, text) == unicodedata.normalize(form, text)


@native_only
@settings(max_examples=400, deadline=None)
@given(TEXTS, st.sampled_from(COMPOSED))
def test_spans_start_and_end_where_the_text_may_be_cut(text: str, form: Form) -> None:
    assert normal_forms.SPANS is not None
    parts = normal_forms.SPANS(form, text)
    if parts is None:
        assert unicodedata.is_normalized(form, text)
        return
    assert len(parts) % 2 == 1 and "".join(parts) == text
    assert all(parts[1::2]), "an empty span"
    assert all(parts[2:-1:2]), "touching spans not made one"
    for kept in parts[::2]:
        assert unicodedata.is_normalized(form, kept), kept
    ends = list(accumulate(map(len, parts)))  # of each part: in order, within the text
    starts, stops = ends[:-1:2], ends[1::2]  # of the spans
    whole = unicodedata.normalize(form, text)
    for cut in starts + stops:
        head, tail = text[:cut], text[cut:]
        assert unicodedata.normalize(form, head) + unicodedata.normalize(form, tail) == whole
    for start in starts:  # after the text's start, a span starts at a boundary
        ch = text[start]
        assert not start or (unicodedata.combining(ch) == 0 and unicodedata.is_normalized(form, ch))


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
        "\u1100\u1161\u11a8",  # L V T: one syllable
        "\uac00\u11a8",  # LV + T
        "\uac01\u11a8",  # LVT + T: stays apart
        "\u0301",  # a mark at the start
        "\u1161" * 3,  # vowel jamo with no leading one
        "क\u093c" * 3 + "\n" + "क\u093c",
        "न\u093c",  # composes to ऩ
        "न\u093c\u093c",
        "\u0958" * 2,  # excluded: decomposes, never recomposes
        "\u00e9\u0323",  # é then a mark of a lower class: reordered, and recomposed otherwise
        "\u0b47\u0b3e\u0b57",
        "\uff76\uff9e",  # halfwidth katakana and voiced mark: NFKC composes them
        "a\u00a0b",  # Latin-1 with a compatibility character
        "no line feed: e\u0301",
        "line ends\r\ne\u0301\r\n",
        "a line of more than sixteen characters: cafe\u0301\nand another one, in the form\n",
    ],
)
def test_edges(text: str, form: Form) -> None:
    assert normalize(form, text) == unicodedata.normalize(form, text)
    assert by_lines(form, text) == unicodedata.normalize(form, text)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "text", ["déjà vu\nनमस्ते\n", "फ़िल्म ज़रूर", "中文 😀 テキスト", "\u00e9t\u00e9", "가각"]
)
def test_text_in_the_form_is_returned_as_is(text: str, form: Form) -> None:
    if unicodedata.is_normalized(form, text):
        assert normalize(form, text) is text
    else:
        assert form in ("NFD", "NFKD")


@native_only
@pytest.mark.parametrize(("period", "whole"), [(12, True), (30, True), (40, False)])
def test_a_text_of_dense_spans_is_normalized_whole(period: int, whole: bool) -> None:
    """A span costs a call: more than one span per 32 characters and the scan gives the whole
    text as one span (a composing mark every 12 characters cost twice the whole normalization,
    span by span)."""
    assert normal_forms.SPANS is not None
    text = ("a\u0301" + "x" * (period - 2)) * (100_000 // period)
    parts = normal_forms.SPANS("NFC", text)
    assert parts is not None
    assert (parts == ["", text, ""]) is whole
    assert len(parts) == (3 if whole else 2 * (100_000 // period) + 1)
    assert normalize("NFC", text) == unicodedata.normalize("NFC", text)


@native_only
def test_a_text_of_another_form_is_refused_by_the_scan() -> None:
    assert normal_forms.SPANS is not None
    with pytest.raises(ValueError, match="NFC or NFKC"):
        normal_forms.SPANS("NFD", "e\u0301")


def test_tables_of_another_unicode_version_are_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unicodedata, "unidata_version", "0.0.0")
    try:
        importlib.reload(normal_forms)
        assert normal_forms.SPANS is None
        assert normal_forms.normalize("NFC", "न\u093c") == "\u0929"
    finally:
        monkeypatch.undo()
        importlib.reload(normal_forms)
    assert (normal_forms.SPANS is not None) == native.AVAILABLE


MARKS = [c for c in ALPHABET if len(c) == 1 and (unicodedata.combining(c) or c in "\u0f73\uff9e")]
LONG_RUNS = st.tuples(
    st.sampled_from(["a", "e", "\u0915", "\u1100", "가", "\uff76", "\u0627"]),
    st.lists(st.sampled_from(MARKS), min_size=normal_forms.LONG_RUN + 1, max_size=200),
    st.sampled_from(["", "a", "\u1161", "b\u0301"]),
).map(lambda t: t[0] + "".join(t[1]) + t[2])


@native_only
@settings(max_examples=300, deadline=None)
@given(st.lists(LONG_RUNS | TEXTS, min_size=1, max_size=4).map("".join), st.sampled_from(COMPOSED))
def test_long_runs_of_marks_ordered_here_give_unicodedatas_string(text: str, form: Form) -> None:
    assert normalize(form, text) == unicodedata.normalize(form, text)


@native_only
@settings(max_examples=300, deadline=None)
@given(st.lists(LONG_RUNS | TEXTS, max_size=4).map("".join), st.sampled_from(COMPOSED))
def test_ordered_is_the_full_decomposition_in_canonical_order(text: str, form: Form) -> None:
    decomposed = unicodedata.normalize(normal_forms.DECOMPOSED[form], text)
    assert normal_forms.ordered(form, text) == decomposed


@native_only
@pytest.mark.parametrize("form", COMPOSED)
@pytest.mark.parametrize(
    "text",
    [
        "a" + "\u0301\u0316" * 2_000,  # two marks out of order, alternating (a review's finding)
        "a" + "\u0f73" * 4_000,  # a letter whose decomposition is two non-starters, repeated
        "\uff76" + "\uff9e\u0301" * 2_000,  # a mark only NFKC decomposes to a non-starter
    ],
)
def test_a_long_run_of_marks_out_of_order_is_ordered_here(
    text: str, form: Form, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CPython orders a run of marks by an insertion sort (half a MB of the first text: 52 s
    in one call, the worker's event loop blocked): a long run is ordered here first, which gives
    the same string. (U+FF9E is a boundary of NFC, a mark only under NFKC.)"""
    long_run = form == "NFKC" or not text.startswith("\uff76")
    assert (native._native.normal_longest_run(form, text) > normal_forms.LONG_RUN) is long_run
    ordered_here: list[int] = []
    real = normal_forms.ordered

    def recorded(f: Form, t: str) -> str:
        ordered_here.append(len(t))
        return real(f, t)

    monkeypatch.setattr(normal_forms, "ordered", recorded)
    assert normalize(form, text) == unicodedata.normalize(form, text)
    assert bool(ordered_here) is long_run


# --- without the extension (and NFD, NFKD): long runs ordered in Python ----------------------


@settings(max_examples=300, deadline=None)
@given(st.lists(LONG_RUNS | TEXTS, min_size=1, max_size=4).map("".join), st.sampled_from(FORMS))
def test_by_lines_orders_long_runs_of_marks_of_mixed_classes_as_unicodedata(
    text: str, form: Form
) -> None:
    assert by_lines(form, text) == unicodedata.normalize(form, text)
    assert normal_forms.in_order(form, text) == unicodedata.normalize(form, text)


def unordered_run(form: Form, text: str) -> int:
    """The longest run of non-starters out of canonical order (0 if none) in the decomposition
    of `text` that `unicodedata` makes for `form` (what its insertion sort then orders)."""
    longest, run = 0, ""
    for c in text.translate(normal_forms.decompositions(normal_forms.DECOMPOSED[form])) + "a":
        if unicodedata.combining(c):
            run += c
            continue
        if list(run) != sorted(run, key=unicodedata.combining):
            longest = max(longest, len(run))
        run = ""
    return longest


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "text",
    [
        "a" + "\u0301\u0316" * 2_000,  # two marks out of order, alternating (a review's finding)
        "x\n" * 20 + "a" + "\u0f73\u0316" * 1_000 + "\nb\u0327\u0301",  # in one line of several
        "\uff76" + "\uff9e\u0301" * 2_000,  # a mark only the K forms decompose to a non-starter
    ],
)
def test_without_the_extension_unicodedata_never_orders_a_long_run(
    text: str, form: Form, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CPython orders a run of marks by an insertion sort (128 KB of the first text: 3.3 s in one
    call): without the scan (and for NFD, NFKD), `by_lines` orders a long run itself, and what
    `unicodedata` is given has no run out of order longer than LONG_RUN; the string is the same."""
    expected = unicodedata.normalize(form, text)
    given_to_unicodedata: list[int] = []
    real = unicodedata.normalize

    def recorded(f: Form, t: str) -> str:
        given_to_unicodedata.append(unordered_run(f, t))
        return real(f, t)

    normal_forms.prepare(form)  # its tables call unicodedata.normalize for each code point
    monkeypatch.setattr(normal_forms, "SPANS", None)
    monkeypatch.setattr(unicodedata, "normalize", recorded)
    assert normalize(form, text) == expected
    assert max(given_to_unicodedata, default=0) <= normal_forms.LONG_RUN, given_to_unicodedata


@pytest.mark.parametrize(
    "spans", [pytest.param(True, marks=native_only), False], ids=["by spans", "by lines"]
)
def test_a_tokenizer_that_normalizes_makes_the_tables_as_it_loads(
    spans: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tables a long run needs on this build's way are made by loading the tokenizer (in its
    thread), not by the first request that meets a long run (on the event loop for a small one:
    ~0.1-0.2 s); by spans (the extension), `mark_runs` is not needed and not made."""
    if not spans:
        monkeypatch.setattr(normal_forms, "SPANS", None)
    made = [normal_forms.decompositions, normal_forms.mark_runs]
    for table in made:
        table.cache_clear()
    vocab = Vocabulary.build("pairs", [(104, 105, 256)])
    Tokenizer(vocab, PythonEngine(vocab, r"\w+|\s+"), normalization="NFKC")
    assert [t.cache_info().currsize for t in made] == [1, 0 if spans else 1]
    normalizers.unicode_form("NFC")  # a format v2 pipeline's normalizer, made as it loads
    assert [t.cache_info().currsize for t in made] == [2, 0 if spans else 2]
    misses = [t.cache_info().misses for t in made]
    text = "a" + "\u0301\u0316" * 40  # a long run
    for form in COMPOSED:
        assert normalize(form, text) == unicodedata.normalize(form, text)
    assert [t.cache_info().misses for t in made] == misses  # nothing more was made
