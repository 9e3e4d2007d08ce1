"""A vocabulary built from validated merge triples: what the merge rules and the decoder look up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from service.bpe.merge import merge_pairs, merge_ranks

Rule = Literal["pairs", "ranks"]
IDENTITY_BYTE_IDS: tuple[int, ...] = tuple(range(256))


@dataclass(frozen=True, slots=True, eq=False)
class Vocabulary:
    """The tokens of one tokenizer, without its special tokens.

    `merges` maps (left id, right id) -> new id (the `pairs` rule's rank); `encoder` maps token
    bytes -> id (the `ranks` rule's rank; empty for `pairs`, where two ids may share bytes);
    `decoder` maps every id -> its bytes.
    """

    rule: Rule
    byte_ids: tuple[int, ...]
    merges: Mapping[tuple[int, int], int]
    encoder: Mapping[bytes, int]
    decoder: Mapping[int, bytes]

    @classmethod
    def build(
        cls,
        rule: Rule,
        merges: Sequence[tuple[int, int, int]],
        byte_ids: Sequence[int] = IDENTITY_BYTE_IDS,
        extra_tokens: Mapping[int, bytes] | None = None,
    ) -> Vocabulary:
        """Build from input the store has validated (children defined before use, ids unique)."""
        decoder: dict[int, bytes] = {tid: bytes([b]) for b, tid in enumerate(byte_ids)}
        decoder.update(extra_tokens or {})
        pairs: dict[tuple[int, int], int] = {}
        for left, right, new in merges:
            decoder[new] = decoder[left] + decoder[right]
            pairs[left, right] = new
        encoder = {data: tid for tid, data in decoder.items()} if rule == "ranks" else {}
        return cls(rule, tuple(byte_ids), pairs, encoder, decoder)

    def __len__(self) -> int:
        return len(self.decoder)

    def merge_piece(self, piece: bytes) -> list[int]:
        """The ids of one pre-tokenized piece under this vocabulary's rule."""
        if self.rule == "ranks":
            return merge_ranks(piece, self.encoder)
        byte_ids = self.byte_ids
        return merge_pairs([byte_ids[b] for b in piece], self.merges)

    def self_consistent(self) -> bool:
        """True when every token's bytes encode to that token alone.

        Always true for `ranks` (a piece that is a token is returned whole). For `pairs` it is what
        makes lowest-rank-pair merging agree with lowest-rank-bytes merging on every input, so a
        faster `ranks` engine may serve it.
        """
        if self.rule == "ranks":
            return True
        merges, byte_ids, decoder = self.merges, self.byte_ids, self.decoder
        return all(
            merge_pairs([byte_ids[b] for b in decoder[new]], merges) == [new]
            for new in merges.values()
        )
