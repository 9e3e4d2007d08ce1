"""The decoder text steps of Hugging Face `tokenizers` that change text, reimplemented exactly.

Decoding joins the ids' bytes and decodes them as UTF-8 (byte-level, byte-fallback and fuse steps
need nothing more); these steps then run in order on the text. A step is told the bytes of the
output's first token (`first`), or None when the text it is given does not begin the output (a
stream's later chunks): the steps that treat the start of a sequence apart apply only then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Decode = Callable[[str, bytes | None], str]


def replace(pattern: str, content: str) -> Decode:
    """Every `pattern` (one character) becomes `content`."""
    return lambda text, first: text.replace(pattern, content)


def metaspace(replacement: str) -> Decode:
    """Every `replacement` becomes a space, but those of the first token are dropped."""
    mark = replacement.encode("utf-8")

    def decode(text: str, first: bytes | None) -> str:
        drop = first.count(mark) if first is not None else 0
        return text.replace(replacement, "", drop).replace(replacement, " ")

    return decode


def strip(content: str, count: int) -> Decode:
    """Up to `count` leading `content` characters leave the start of the output."""

    def decode(text: str, first: bytes | None) -> str:
        if first is None:
            return text
        n = 0
        while n < count and text.startswith(content, n * len(content)):
            n += 1
        return text[n * len(content) :]

    return decode


def run_decoders(steps: Sequence[Decode], text: str, first: bytes | None) -> str:
    for step in steps:
        text = step(text, first)
    return text
