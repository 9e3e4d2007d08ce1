"""The pre-tokenizers of Hugging Face `tokenizers`, reimplemented exactly.

A pre-tokenizer step maps one piece to pieces; steps run in order, each on every piece the previous
step made; empty pieces are dropped, as the reference drops them. A step is told whether its piece
begins at the very start of the caller's text (`at_start`) and answers with its pieces and whether
the first of them begins where its piece began.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Literal

import regex

from service.bpe.deadline import CHECK_EVERY, checkpoint
from service.bpe.engine.matching import KNOWN, matches_of, timed_finditer

Behavior = Literal["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]
PreTokenize = Callable[[str, bool], tuple[list[str], bool]]

# Hugging Face's ByteLevel regex (GPT-2's), and Rust's char classes in `regex` syntax
BYTE_LEVEL_REGEX = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_WHITESPACE = r"\p{White_Space}"
_PUNCTUATION = r"[\p{P}!-/:-@\[-`{-~]"
_WORD_RUNS = r"\w+|[^\w\s]+"


Find = Callable[[str], Iterable[regex.Match[str]]]


def _spans(text: str, find: Find, invert: bool) -> list[tuple[int, int, bool]]:
    """(start, end, is_match) covering `text`, gaps between matches included."""
    out: list[tuple[int, int, bool]] = []
    previous = 0
    for m in find(text):
        if m.start() == m.end():
            continue
        if m.start() > previous:
            out.append((previous, m.start(), invert))
        out.append((m.start(), m.end(), not invert))
        previous = m.end()
    if previous < len(text):
        out.append((previous, len(text), invert))
    return out


def _combine(spans: list[tuple[int, int, bool]], behavior: Behavior) -> list[tuple[int, int]]:
    """The reference's `SplitDelimiterBehavior` over the spans."""
    if behavior == "removed":
        return [(a, b) for a, b, match in spans if not match]
    if behavior == "isolated":
        return [(a, b) for a, b, _ in spans]
    acc: list[list[int]] = []
    previous_match = False
    if behavior == "merged_with_next":
        for a, b, match in reversed(spans):
            if match and not previous_match and acc:
                acc[-1][0] = a
            else:
                acc.append([a, b])
            previous_match = match
        return [(a, b) for a, b in reversed(acc)]
    for a, b, match in spans:
        if behavior == "merged_with_previous":
            merge = match and not previous_match
        else:  # contiguous
            merge = match == previous_match
        if merge and acc:
            acc[-1][1] = b
        else:
            acc.append([a, b])
        previous_match = match
    return [(a, b) for a, b in acc]


def split(
    pattern: str, behavior: Behavior, *, is_regex: bool, invert: bool, trusted: bool = False
) -> PreTokenize:
    """A Split step; a regex from a file (not `trusted`, not a shipped one) runs under the
    work's time bound (service/bpe/engine/matching.py)."""
    source = pattern if is_regex else regex.escape(pattern)
    matcher = regex.compile(source)
    timed = is_regex and not trusted and source not in KNOWN
    find: Find = partial(timed_finditer, matcher) if timed else matcher.finditer
    isolated = behavior == "isolated" and matcher.groups == 0 and not timed
    fast = _isolating(source) if isolated else None

    def pre_tokenize(text: str, at_start: bool) -> tuple[list[str], bool]:
        if fast is not None:
            parts = fast(text)  # gaps and matches alternate; a match is never empty here
            if all(parts[1::2]):
                return [p for p in parts if p], True
        cuts = [(a, b) for a, b in _combine(_spans(text, find, invert), behavior) if b > a]
        return [text[a:b] for a, b in cuts], bool(cuts) and cuts[0][0] == 0

    return pre_tokenize


def _isolating(source: str) -> Callable[[str], list[str]] | None:
    """`regex.split` with the whole pattern captured: the `isolated` cut at C speed, exact
    whenever no match is empty (the reference skips empty matches; the caller checks)."""
    try:
        wrapped = regex.compile(f"({source})")
    except regex.error:
        return None
    split_all: Callable[[str], list[str]] = wrapped.split
    return split_all


def matches(pattern: str) -> PreTokenize:
    """A file's `pattern` (format v1's meaning, tiktoken's): the pieces are its matches, text no
    match covers is dropped."""
    findall = matches_of(pattern)

    def pre_tokenize(text: str, at_start: bool) -> tuple[list[str], bool]:
        found = [p for p in findall(text) if p]
        return found, bool(found) and text.startswith(found[0])

    return pre_tokenize


def byte_level(*, add_prefix_space: bool, use_regex: bool) -> PreTokenize:
    splitter = split(BYTE_LEVEL_REGEX, "isolated", is_regex=True, invert=False, trusted=True)

    def pre_tokenize(text: str, at_start: bool) -> tuple[list[str], bool]:
        if add_prefix_space and not text.startswith(" "):
            text = " " + text
        return splitter(text, at_start) if use_regex else ([text], True)

    return pre_tokenize


def metaspace(
    replacement: str, scheme: Literal["first", "always", "never"], *, split_pieces: bool
) -> PreTokenize:
    splitter = split(replacement, "merged_with_next", is_regex=False, invert=False)

    def pre_tokenize(text: str, at_start: bool) -> tuple[list[str], bool]:
        text = text.replace(" ", replacement)
        if not text.startswith(replacement) and (
            scheme == "always" or (scheme == "first" and at_start)
        ):
            text = replacement + text
        return splitter(text, at_start) if split_pieces else ([text], True)

    return pre_tokenize


def digits(*, individual: bool) -> PreTokenize:
    return split(
        r"\p{N}",
        "isolated" if individual else "contiguous",
        is_regex=True,
        invert=False,
        trusted=True,
    )


def punctuation(behavior: Behavior) -> PreTokenize:
    return split(_PUNCTUATION, behavior, is_regex=True, invert=False, trusted=True)


def whitespace() -> PreTokenize:
    return split(_WORD_RUNS, "removed", is_regex=True, invert=True, trusted=True)


def whitespace_split() -> PreTokenize:
    return split(_WHITESPACE + "+", "removed", is_regex=True, invert=False, trusted=True)


def run_pre_tokenizers(steps: Sequence[PreTokenize], text: str, at_start: bool) -> list[str]:
    """The pieces of `text` (a Python loop over every piece of every step: the work's deadline is
    checked every `CHECK_EVERY` pieces)."""
    pieces = [text] if text else []
    for step in steps:
        out: list[str] = []
        for i, piece in enumerate(pieces):
            if i % CHECK_EVERY == CHECK_EVERY - 1:
                checkpoint()
            got, starts = step(piece, at_start and i == 0)
            if i == 0:
                at_start = at_start and starts and bool(got)
            out += got
        pieces = out
    return pieces
