"""Encode's optional `pieces` and `offsets`, in their wire form, and what they may cost.

Both are built in the work that encodes (off the event loop when large), and only after their
JSON size has been worked out from the ids (`wire_size`, no list built): past
TOKSVC_MAX_OUTPUT_BYTES the request is a 413 problem.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from service.api.wire.tokens import PieceBytes
from service.bpe import Tokenizer
from service.bpe.text import pieces as domain

_encode = msgspec.json.Encoder().encode

OFFSET_BYTES = 4  # brackets and commas of one [start, end] pair, beside its digits
BASE64_OVERHEAD = 15  # `{"base64":""},` around a piece's base64


def wire_size(tok: Tokenizer, ids: Sequence[int], want_pieces: bool, unit: str) -> int:
    """The JSON bytes of `ids`' pieces (exact: each distinct token's piece is sized once, then the
    few first pieces that differ, `domain.leading`) and an upper estimate of their offsets (each
    pair two numbers of at most the digits of twice the decoded text's length in code points, its
    length in UTF-16 at most)."""
    size = 0
    if want_pieces:
        each = {tid: _piece_size(domain.piece_of(tok, tid)) for tid in set(ids)}
        size += sum(map(each.__getitem__, ids))
        size += sum(_piece_size(p) - each[ids[i]] for i, p in domain.leading(tok, ids))
    if unit != "none":
        n_chars = len(tok.decode(ids, "replace"))  # the text offsets count in, not the input
        size += (2 * len(str(2 * n_chars)) + OFFSET_BYTES) * len(ids)
    return size


def _piece_size(piece: str | bytes) -> int:
    if isinstance(piece, str):
        return len(_encode(piece)) + 1  # and a comma
    return 4 * -(-len(piece) // 3) + BASE64_OVERHEAD


def extras(
    tok: Tokenizer, ids: Sequence[int], want_pieces: bool, unit: str
) -> tuple[list[str | PieceBytes] | None, list[tuple[int, int]] | None]:
    p = None
    if want_pieces:
        p = [
            x if isinstance(x, str) else PieceBytes(base64=domain.b64(x))
            for x in domain.pieces(tok, ids)
        ]
    o = None
    if unit != "none":
        o = domain.offsets(tok, ids, "utf16" if unit == "utf16" else "codepoints")
    return p, o


def token_strs(tok: Tokenizer, ids: Sequence[int]) -> tuple[list[str], int]:
    """vLLM's `token_strs` (each token's text, U+FFFD where its bytes split a character) and their
    JSON size, exact: each distinct token is decoded and sized once, and the list shares those
    strings, so a long list costs a reference per id (a control character's `\\u0001` escape made
    a 2 MB prompt answer 18 MB)."""
    each = {tid: tok.decode_bytes([tid]).decode("utf-8", "replace") for tid in set(ids)}
    sizes = {tid: len(_encode(text)) + 1 for tid, text in each.items()}  # and a comma
    return [each[tid] for tid in ids], sum(map(sizes.__getitem__, ids))
