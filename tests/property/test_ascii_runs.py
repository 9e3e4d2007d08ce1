"""The scanners' fast path over ASCII runs (service/bpe/csrc/ascii_runs.h reads 16 bytes at a time)
cuts as the `regex` module does with each shipped pattern, and as the Python steps do for the
DeepSeek chain: runs of every class around the block size (lengths 0..40), ending at the text's
end, mixed with non-ASCII characters of the same class and of others, every ASCII byte after a
run, and \\r \\n inside whitespace runs (the last line end and the last character count there)."""

from __future__ import annotations

from functools import cache

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from service.bpe.engine import native
from service.bpe.engine.patterns import PATTERNS
from tests.property.test_chains import python_pieces

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the native engine is not built")

# the scanners of one pattern, and DeepSeek's chain (against the Python steps)
SCANNERS = [*sorted(s for s in native.SCANNERS if s in PATTERNS), "deepseek"]
ASCII = [chr(b) for b in range(128)]
# per class: its ASCII characters, and characters of it assigned by Unicode 14 (where `regex`
# and the scanners' tables agree) of two, three and four bytes in UTF-8
CLASSES = {
    "letter": ("abcxyzABCXYZ", "éǅЖ中ひ\U00010400"),
    "digit": ("0123456789", "٣½\U0001d7ce"),
    "space": (" \t\n\r\x0b\x0c", "\u00a0\x85\u2028\u3000"),
    "other": ('!"#/:@[`{~\x00\x01\x1f\x7f', "\u0301‽😀\u200b"),
}
LENGTHS = [0, 1, 2, 7, 8, 9, 14, 15, 16, 17, 18, 30, 31, 32, 33, 34, 40]


def run_of(kind: str) -> st.SearchStrategy[str]:
    """A run of one class around the block size: one character repeated, ASCII ones mixed, or
    ASCII with now and then a non-ASCII character of the class."""
    ascii_, wide = CLASSES[kind]
    size = st.one_of(st.sampled_from(LENGTHS), st.integers(0, 40))
    return st.one_of(
        st.tuples(st.sampled_from(ascii_ + wide), size).map(lambda t: t[0] * t[1]),
        st.text(st.sampled_from(ascii_), min_size=0, max_size=40),
        st.text(st.sampled_from(ascii_ * 8 + wide), min_size=0, max_size=40),
    )


runs = st.one_of([run_of(kind) for kind in CLASSES])
texts = st.lists(
    st.one_of(runs, runs, st.sampled_from([*ASCII, "\r\n", "'s", " '", "'LL", "é", "中"])),
    max_size=8,
).map("".join)


@cache
def reference(scanner: str) -> regex.Pattern[str]:
    return regex.compile(PATTERNS[scanner])


def expected(scanner: str, text: str) -> list[str]:
    if scanner == "deepseek":
        return python_pieces(scanner, text)
    return reference(scanner).findall(text)  # type: ignore[no-any-return]


@pytest.mark.parametrize("scanner", SCANNERS)
@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_runs_around_the_block_size_cut_as_the_reference(scanner: str, text: str) -> None:
    assert native.split(scanner, text) == expected(scanner, text), ascii(text)


@pytest.mark.parametrize("scanner", SCANNERS)
@pytest.mark.parametrize("kind", sorted(CLASSES))
def test_every_ascii_byte_after_a_run_of_each_length(scanner: str, kind: str) -> None:
    """A run of each length from 0 to 40 of each ASCII character of the class, then each ASCII
    byte (the one that ends the run, or not), then either the text's end or a letter."""
    for c in CLASSES[kind][0]:
        for length in range(41):
            run = c * length
            for b in ASCII:
                for text in (run + b, run + b + "x" + run):
                    got = native.split(scanner, text)
                    assert got == expected(scanner, text), (scanner, ascii(text))
