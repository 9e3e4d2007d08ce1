"""The normalizers of Hugging Face `tokenizers`, reimplemented exactly.

A normalizer maps a stretch of text to text and says whether the result still begins at the
original's first character (what a Metaspace pre-tokenizer's `prepend_scheme: first` asks: a
leading strip moves it). Each function here makes one step; `run_normalizers` runs them in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import regex

from service.bpe.pipeline import normal_forms

Normalize = Callable[[str, bool], tuple[str, bool]]
Form = Literal["NFC", "NFKC", "NFD", "NFKD"]
Normalization = Literal["none", "NFC", "NFKC"]  # a format v1 file's `normalization`
_WHITESPACE = r"\p{White_Space}"


def unicode_form(form: Form) -> Normalize:
    normal_forms.prepare(form)  # as the tokenizer loads, not on a request's first run of marks

    def normalize(text: str, origin: bool) -> tuple[str, bool]:
        return normal_forms.normalize(form, text), origin

    return normalize


def lowercase() -> Normalize:
    return lambda text, origin: (text.lower(), origin)


def replace(pattern: str, content: str, *, is_regex: bool) -> Normalize:
    if not is_regex and pattern:  # a string: str.replace, leftmost non-overlapping as the regex
        return lambda text, origin: (
            text.replace(pattern, content),
            origin and (bool(content) or not text.startswith(pattern)),
        )
    compiled = regex.compile(pattern if is_regex else regex.escape(pattern))

    def normalize(text: str, origin: bool) -> tuple[str, bool]:
        if not pattern:
            return text, origin
        first = compiled.search(text)
        if first is None:
            return text, origin
        # a match at the start replaced by nothing leaves a text beginning later in the original
        moved = first.start() == 0 and not content and first.end() > 0
        return compiled.sub(lambda _: content, text), origin and not moved

    return normalize


def prepend(prefix: str) -> Normalize:
    return lambda text, origin: ((prefix + text) if text else text, origin)


def strip(*, left: bool, right: bool) -> Normalize:
    lead = regex.compile(_WHITESPACE + "+")

    def normalize(text: str, origin: bool) -> tuple[str, bool]:
        out = text
        if left and (m := lead.match(out)):
            out, origin = out[m.end() :], False
        if right:
            out = regex.sub(_WHITESPACE + "+$", "", out)
        return out, origin

    return normalize


def run_normalizers(steps: Sequence[Normalize], text: str, origin: bool) -> tuple[str, bool]:
    for step in steps:
        text, origin = step(text, origin)
    return text, origin
