"""What each token of an encoding stands for: its text (or bytes) and where it lies in the text.

Both follow the text the ids decode to (the input itself, unless the tokenizer normalizes it, e.g.
NFC for Qwen), decoder included: a token's piece and span are what it adds to that text. Where a
decoder changes the text (SentencePiece: `▁` becomes a space, the first one dropped), the piece of
`▁world` is " world" and that of a sequence's first `▁Hello` is "Hello".

The ids are walked once, as `StreamDecoder` decodes a stream of one token per step: each token's
bytes go through an incremental UTF-8 decoder, and the decoder's text steps (`text_step`) apply to
what leaves it, with the same `first` argument. What the steps do to a whole text they do to its
pieces (the stream tests check it), so the pieces join to the decoded text. Each distinct token's
text is looked up and stepped once; a token is walked through the UTF-8 decoder only where a
character is unfinished before it, its bytes are not valid UTF-8 alone, or the output has not
begun. The cost is linear in the ids.

A token's bytes need not be valid UTF-8 on their own (a character split over two tokens); its
piece is then given as base64 (the decoder's steps never see part of a character). Offsets are
[start, end) in code points, or in UTF-16 code units for JavaScript. A token that starts or ends
inside a character spans the whole character, so neighbouring offsets can overlap by that one
character.
"""

from __future__ import annotations

import base64
import codecs
import re
from collections.abc import Sequence
from typing import Literal

from service.bpe.stream.utf8 import TextStep
from service.bpe.tokenizer import Tokenizer

Unit = Literal["codepoints", "utf16"]
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _entry(tok: Tokenizer, step: TextStep | None, tid: int) -> tuple[bytes, str | None, str | None]:
    """A token's bytes, their text (None where they are not valid UTF-8 alone) and that text
    after the decoder's steps where the output has already begun."""
    data = tok.decode_bytes([tid])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data, None, None
    return data, text, text if step is None or not text else step(text, None)


class _Known(dict[int, tuple[bytes, str | None, str | None]]):
    """`_entry` of each distinct token, made once."""

    def __init__(self, tok: Tokenizer) -> None:
        super().__init__()
        self.tok = tok
        self.step = tok.text_step

    def __missing__(self, tid: int) -> tuple[bytes, str | None, str | None]:
        entry = self[tid] = _entry(self.tok, self.step, tid)
        return entry


def piece_of(tok: Tokenizer, tid: int) -> str | bytes:
    """A token's piece wherever the output has already begun: its text after the decoder's steps,
    or its bytes where they are not valid UTF-8 alone."""
    data, _, later = _entry(tok, tok.text_step, tid)
    return data if later is None else later


def leading(tok: Tokenizer, ids: Sequence[int]) -> list[tuple[int, str | bytes]]:
    """The pieces that differ from `piece_of`'s: those of the first ids, up to the first whose
    bytes begin the output (a decoder's steps treat the output's start apart: `first`), with
    their index."""
    step = tok.text_step
    if step is None:
        return []
    known = _Known(tok)
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    out: list[tuple[int, str | bytes]] = []
    for i, tid in enumerate(ids):
        data, text, later = known[tid]
        pending = utf8.getstate()[0]
        first = b"" if pending else data
        if text is not None:
            piece = step(text, first) if text else text
            if piece != later:
                out.append((i, piece))
        utf8.decode(data)
        if len(pending) + len(data) > len(utf8.getstate()[0]):  # some bytes left: it has begun
            break
    return out


def pieces(tok: Tokenizer, ids: Sequence[int]) -> list[str | bytes]:
    """Each token's piece: what it adds to the decoded text, or its raw bytes where they are not
    valid UTF-8 on their own."""
    known = _Known(tok)
    out: list[str | bytes] = []
    for tid in ids:
        data, _, later = known[tid]
        out.append(data if later is None else later)
    for i, piece in leading(tok, ids):
        out[i] = piece
    return out


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def walk(tok: Tokenizer, ids: Sequence[int]) -> tuple[str, list[int], list[int]]:
    """The text the ids decode to (errors replaced), and where each token starts and ends in it,
    in code points: it starts where the text stands before it (at the start of a character it
    completes) and ends where the text stands after it, or one character later where its bytes
    begin a character a later token completes. Starts and ends never decrease."""
    step = tok.text_step
    known = _Known(tok)
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = end = 0
    pending = b""  # the bytes of an unfinished character, before the next token
    begun = step is None  # whether some bytes have left the UTF-8 decoder (`first` is None)
    for tid in ids:
        data, text, later = known[tid]
        starts.append(pos)
        if not pending and begun and later is not None:  # its text, stepped, all of it
            parts.append(later)
            pos += len(later)
            end = max(end, pos)
        else:
            first = None if begun else (b"" if pending else data)
            utf8.setstate((pending, 0))
            out = utf8.decode(data)
            held = utf8.getstate()[0]
            begun = begun or len(pending) + len(data) > len(held)
            pending = held
            if step is not None and out:
                out = step(out, first)
            parts.append(out)
            pos += len(out)
            end = max(end, pos + 1 if pending else pos)
        ends.append(end)
    if pending:  # an unfinished character at the end: one U+FFFD
        utf8.setstate((pending, 0))
        out = utf8.decode(b"", True)
        parts.append(step(out, None if begun else b"") if step is not None else out)
    text = "".join(parts)
    if end > len(text):  # only where the steps drop a character a token had begun
        ends = [min(e, len(text)) for e in ends]
    return text, starts, ends


def offsets(tok: Tokenizer, ids: Sequence[int], unit: Unit = "codepoints") -> list[tuple[int, int]]:
    """Each token's [start, end) in the decoded text (`walk`), in code points or UTF-16 units."""
    text, starts, ends = walk(tok, ids)
    if unit == "utf16" and not text.isascii():
        astral = [m.start() for m in _ASTRAL.finditer(text)]
        if astral:
            starts, ends = _utf16(starts, astral), _utf16(ends, astral)
    return list(zip(starts, ends, strict=True))


def character_starts(tok: Tokenizer, ids: Sequence[int]) -> list[int]:
    """How many characters of the decoded text start in each token (a character split over two
    tokens counts in the first): summed over a prefix of the ids, where the next token lies in the
    decoded text, in code points. `Tokenizer.character_starts` counts them in the tokens' bytes,
    the same where the tokenizer has no decoder steps."""
    if tok.text_step is None:
        return tok.character_starts(ids)
    _, _, ends = walk(tok, ids)
    return [b - a for a, b in zip([0, *ends], ends, strict=False)]


def _utf16(values: list[int], astral: list[int]) -> list[int]:
    """Code point offsets (never decreasing) in UTF-16 units: one more per astral character
    before each (`astral`: their code point indices, in order)."""
    out: list[int] = []
    k, n = 0, len(astral)
    for v in values:
        while k < n and astral[k] < v:
            k += 1
        out.append(v + k)
    return out
