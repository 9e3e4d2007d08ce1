"""What each token of an encoding stands for: its text (or bytes) and where it lies in the text.

A token's bytes need not be valid UTF-8 on their own (a character split over two tokens); its
piece is then given as base64. Offsets are [start, end) in code points, or in UTF-16 code units
for JavaScript, over the text the ids decode to (the input itself, unless the tokenizer
normalizes it, e.g. NFC for Qwen). A token that starts or ends inside a character spans the
whole character, so neighbouring offsets can overlap by that one character.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Literal

from service.bpe import Tokenizer

Unit = Literal["codepoints", "utf16"]


def pieces(tok: Tokenizer, ids: Sequence[int]) -> list[str | bytes]:
    """Each token's text, or its raw bytes where they are not valid UTF-8 on their own."""
    out: list[str | bytes] = []
    for tid in ids:
        data = tok.decode_bytes([tid])
        try:
            out.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(data)
    return out


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def offsets(tok: Tokenizer, ids: Sequence[int], unit: Unit = "codepoints") -> list[tuple[int, int]]:
    lengths = [len(tok.decode_bytes([tid])) for tid in ids]
    text = tok.decode(ids, "replace")
    out: list[tuple[int, int]] = []
    ci = cb = cu = 0  # the next character: its index, byte offset and unit offset
    pos = 0
    for length in lengths:
        start = cu  # the character at ci starts at or before pos
        end_byte = pos + length
        while ci < len(text) and cb + _utf8_len(text[ci]) <= end_byte:
            cb += _utf8_len(text[ci])
            cu += _units(text[ci], unit)
            ci += 1
        end = cu if cb == end_byte or ci >= len(text) else cu + _units(text[ci], unit)
        out.append((start, end))
        pos = end_byte
    return out


def _utf8_len(ch: str) -> int:
    o = ord(ch)
    return 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4


def _units(ch: str, unit: Unit) -> int:
    return 2 if unit == "utf16" and ord(ch) > 0xFFFF else 1
