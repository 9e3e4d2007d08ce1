"""Encode's optional `pieces` and `offsets`, in their wire form."""

from __future__ import annotations

from collections.abc import Sequence

from service.api.wire.tokens import PieceBytes
from service.bpe import Tokenizer
from service.bpe import pieces as domain


def extras(
    tok: Tokenizer, ids: Sequence[int], want_pieces: bool, unit: str
) -> tuple[list[str | PieceBytes] | None, list[tuple[int, int]] | None]:
    p = None
    if want_pieces:
        p = [x if isinstance(x, str) else PieceBytes(base64=domain.b64(x))
             for x in domain.pieces(tok, ids)]  # fmt: skip
    o = None
    if unit != "none":
        o = domain.offsets(tok, ids, "utf16" if unit == "utf16" else "codepoints")
    return p, o
