"""A vocabulary built from validated merge triples: what the merge rules and the decoder look up.

Kept compact, because a worker holds every shipped vocabulary: token bytes in a list indexed by
id, the merge triples in a flat array (the `pairs` rule's table; the `ranks` rule reads the token
bytes alone, so a `ranks` vocabulary keeps none); the look-up dicts the Python engine needs
(`merges`, `encoder`) are built on first use, so a vocabulary served by the fast engine never
pays for them.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, compress, repeat
from typing import Literal

from service.bpe.merge import merge_pairs, merge_ranks

Rule = Literal["pairs", "ranks"]
IDENTITY_BYTE_IDS: tuple[int, ...] = tuple(range(256))


class Vocabulary:
    """The tokens of one tokenizer, without its special tokens."""

    __slots__ = (
        "_encoder",
        "_merges",
        "_new_of",
        "_triples",
        "byte_ids",
        "free_ids",
        "rule",
        "tokens",
    )

    def __init__(
        self, rule: Rule, byte_ids: Sequence[int], tokens: list[bytes | None], triples: array[int]
    ) -> None:
        self.rule = rule
        if rule == "ranks":  # its merges are the token bytes themselves: no table to keep
            triples = array("I")
        new = triples[2::3]
        # pairs with free ids (format v2): a merge's rank is its position, not its new id
        self.free_ids = rule == "pairs" and any(map(operator.ge, new, new[1:]))
        self.byte_ids = tuple(byte_ids)
        self.tokens = tokens  # tokens[id] = the token's bytes, None where no token has that id
        self._triples = triples  # left, right, new, left, right, new, ...
        self._merges: dict[tuple[int, int], int] | None = None
        self._new_of = triples[2::3] if self.free_ids else None
        self._encoder: dict[bytes, int] | None = None

    @classmethod
    def build(
        cls,
        rule: Rule,
        merges: Sequence[tuple[int, int, int]],
        byte_ids: Sequence[int] = IDENTITY_BYTE_IDS,
        extra_tokens: Mapping[int, bytes] | None = None,
        *,
        token_bytes: Sequence[bytes | None] | None = None,
        triples: bytes | None = None,
    ) -> Vocabulary:
        """Build from input the store has validated (children defined before use, ids unique).
        `token_bytes` (every token's bytes by id, None where no token has that id) and `triples`
        (`merges` as native uint32s), when validation computed them already, save computing
        them again."""
        if token_bytes is None:
            computed: dict[int, bytes] = {tid: bytes([b]) for b, tid in enumerate(byte_ids)}
            computed.update(extra_tokens or {})
            for left, right, new in merges:
                computed[new] = computed[left] + computed[right]
            tokens: list[bytes | None] = [None] * (max(computed) + 1)
            for tid, data in computed.items():
                tokens[tid] = data
        else:
            tokens = list(token_bytes)
        if rule == "ranks":
            flat = array("I")  # not kept (see __init__)
        elif triples is not None and len(triples) == 12 * len(merges):
            flat = array("I")
            flat.frombytes(triples)
        else:
            flat = array("I", chain.from_iterable(merges))
        return cls(rule, byte_ids, tokens, flat)

    def share_tables(self, other: Vocabulary) -> bool:
        """Hold `other`'s token list if it equals this one's (two files with the same tokens
        under the two rules, qwen2 and qwen2.5): one copy of the bytes in memory. Whether they
        were equal."""
        if self.tokens is other.tokens or self.tokens != other.tokens:
            return self.tokens is other.tokens
        self.tokens = other.tokens
        return True

    def items(self) -> Iterable[tuple[int, bytes]]:
        """(id, bytes) of every token."""
        return ((tid, data) for tid, data in enumerate(self.tokens) if data is not None)

    @property
    def merges(self) -> Mapping[tuple[int, int], int]:
        """(left id, right id) -> new id: the `pairs` rule's ranks (built on first use)."""
        if self._merges is None:
            t = self._triples
            if self.free_ids:
                self._merges = {(t[i], t[i + 1]): i // 3 for i in range(len(t) - 3, -1, -3)}
            else:
                self._merges = {(t[i], t[i + 1]): t[i + 2] for i in range(0, len(t), 3)}
        return self._merges

    @property
    def encoder(self) -> Mapping[bytes, int]:
        """Token bytes -> id: the `ranks` rule's ranks (built on first use; the `pairs` rule
        has none, since two of its ids may share bytes)."""
        if self._encoder is None:
            self._encoder = (
                {data: tid for tid, data in self.items()} if self.rule == "ranks" else {}
            )
        return self._encoder

    def merge_piece(self, piece: bytes) -> list[int]:
        """The ids of one pre-tokenized piece under this vocabulary's rule."""
        if self.rule == "ranks":
            return merge_ranks(piece, self.encoder)
        byte_ids = self.byte_ids
        return merge_pairs([byte_ids[b] for b in piece], self.merges, self._new_of)

    def self_consistent(self, all_whole: Callable[[Vocabulary], bool] | None = None) -> bool:
        """True when every token's bytes encode to that token alone.

        Always true for `ranks` (a piece that is a token is returned whole). For `pairs` it is what
        makes lowest-rank-pair merging agree with lowest-rank-bytes merging on every input, so a
        faster `ranks` engine may serve it. `all_whole`: the same check of every token by another
        engine (the native one's `pairs_all_whole`, in one call); by default the merge rule runs
        here on each token.
        """
        if self.rule == "ranks":
            return True
        if self.free_ids:  # several merges may make one token: not the question here
            return False
        tokens = self.tokens
        with_bytes = compress(range(len(tokens)), map(operator.is_not, tokens, repeat(None)))
        if not set(with_bytes).issubset(set(self._triples[2::3]).union(self.byte_ids)):
            return False  # a token no merge makes (format v2's `tokens`) is never an output
        if all_whole is not None:
            return all_whole(self)
        merges, byte_ids = self.merges, self.byte_ids
        for new in self._triples[2::3]:
            data = tokens[new] or b""
            # two bytes merge straight into their pair's token: only longer tokens need a run
            if len(data) > 2 and merge_pairs([byte_ids[b] for b in data], merges) != [new]:
                return False
        return True
