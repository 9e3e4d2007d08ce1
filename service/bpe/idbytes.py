"""What each id decodes to: the id -> bytes table (special and added tokens included) and what
is read from it without decoding text: the bytes of ids joined (all of them, or without the
skipped ids), their size without joining them, and how many characters start in each token.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from service.errors import UnknownIdError

_GAP = 0xFFFFFFFF  # decoded_size's entry for an id without a token: no real sum reaches it


class IdBytes:
    """`table`: id -> bytes, None for an id without a token (ids are dense: a list, at most
    2**24); `skipped_ids`: the ids `kept_bytes` leaves out."""

    def __init__(self, table: list[bytes | None], skipped_ids: frozenset[int]) -> None:
        self.table = table
        self.skipped_ids = skipped_ids
        self._lengths: array[int] | None = None  # built on first use (decoded_size)
        self._leads: array[int] | None = None  # built on first use (character_starts)
        self._kept: list[bytes | None] | None = None  # built on first use (kept_bytes)
        self.defined_ids = len(table) - table.count(None)
        """Number of ids that are defined, special tokens included."""

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes of all ids joined. Unknown ids are an error that names them."""
        table = self.table
        try:
            if ids and min(ids) < 0:  # a negative index would read from the end of the table
                raise IndexError
            return b"".join([table[i] for i in ids])  # type: ignore[misc]
        except (IndexError, TypeError):  # beyond the table, or a gap (None) in it
            size = len(table)
            unknown = [i for i in ids if not 0 <= i < size or table[i] is None]
            raise UnknownIdError(unknown, self.defined_ids) from None

    def kept_bytes(self, ids: Sequence[int]) -> bytes:
        """`decode_bytes` with the bytes of `skipped_ids` left out (what `skip_special_tokens`
        keeps): a second table where they are empty, so the ids need no filtering."""
        kept = self._kept
        if kept is None:  # two threads may both build it: the same list, harmless
            kept = list(self.table)
            for tid in self.skipped_ids:
                kept[tid] = b""
            self._kept = kept
        try:
            if ids and min(ids) < 0:
                raise IndexError
            return b"".join([kept[i] for i in ids])  # type: ignore[misc]
        except (IndexError, TypeError):
            return self.decode_bytes(ids)  # raises UnknownIdError naming them

    def decoded_size(self, ids: Sequence[int]) -> int:
        """The length of `decode_bytes(ids)`, without building it (to check a budget first)."""
        lengths = self._lengths
        if lengths is None:  # two threads may both build it: the same table, harmless
            lengths = self._lengths = array(
                "I", [_GAP if b is None or len(b) >= _GAP else len(b) for b in self.table]
            )
        try:
            if ids and min(ids) < 0:
                raise IndexError
            size = sum(map(lengths.__getitem__, ids))
        except IndexError:
            size = _GAP
        # an unknown id (or a token of 4 GiB) counts _GAP: only then is the exact answer needed
        return size if size < _GAP else len(self.decode_bytes(ids))  # raises UnknownIdError

    def character_starts(self, ids: Sequence[int]) -> list[int]:
        """How many characters start in each token's bytes (its UTF-8 lead bytes): summed over a
        prefix of the ids, where the next token lies in the joined bytes decoded, in code points
        (a character split over two tokens counts in the first). That is the decoded text where
        the decoder changes nothing; where it does (`▁` to a space, the first one dropped), see
        `service.bpe.text.pieces.character_starts`. Known ids only."""
        leads = self._leads
        if leads is None:  # two threads may both build it: the same table, harmless
            starts = [0 if b is None else sum((c & 0xC0) != 0x80 for c in b) for b in self.table]
            leads = self._leads = array("I", starts)
        return list(map(leads.__getitem__, ids))
