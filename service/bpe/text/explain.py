"""Explaining an encoding: the merge steps, one by one, that turn each piece's bytes into ids.

The merge loops in `merge.py` are built for speed and keep no history; this module runs the same
rule step by step and records every merge: where it happened, which two symbols merged, the rank
the rule compared and the new id. Replaying the steps of a piece from its starting symbols gives
exactly the ids `Vocabulary.merge_piece` returns (the tests check this against the shipped
vocabularies). Only for short texts: each step scans the whole piece, O(n^2) per piece.

Under `ranks`, a piece that is itself a token is returned whole, without merging (tiktoken does
the same). The steps still show the merges the rule makes; where they end on more than one token,
a last step of kind `whole` replaces them by the piece's own token, so the last state is always
what the encoder returns.

Building a small vocabulary from merges a person typed (`inline_vocabulary`) validates them, since
they have not been through the store's checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Literal

from service.bpe.engine.matching import matches_of
from service.bpe.pipeline import normal_forms
from service.bpe.pipeline.normalizers import Normalization
from service.bpe.vocab import Rule, Vocabulary
from service.errors import InputError, LimitExceededError

MAX_EXPLAIN_CHARS = 256  # characters of text one explanation may cover
MAX_INLINE_MERGES = 512  # merges of a vocabulary given inline (or trained in the playground)
MAX_EXPLAIN_BYTES = 4 * MAX_EXPLAIN_CHARS  # UTF-8 bytes of the longest text one may explain

_NONE = 1 << 62


@dataclass(frozen=True, slots=True)
class Step:
    """One merge: symbols `at` and `at + 1` (`left`, `right`) became `id`, whose bytes are
    `data`. `rank` is what the rule compared (the lowest wins, leftmost on ties). A `whole` step
    replaces every symbol of the piece by the piece's own token (`at` is 0, `left`/`right` -1)."""

    at: int
    left: int
    right: int
    id: int
    rank: int
    data: bytes
    kind: Literal["merge", "whole"] = "merge"


@dataclass(frozen=True, slots=True)
class PieceSteps:
    """One pre-tokenized piece: its starting symbols (one per byte) and the merges applied."""

    text: str
    start: list[int]
    start_data: list[bytes]
    steps: list[Step] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)


def explain_text(
    vocab: Vocabulary,
    pattern: str | None,
    text: str,
    normalization: Normalization = "none",
    max_chars: int = MAX_EXPLAIN_CHARS,
) -> list[PieceSteps]:
    """The merge steps of every piece of `text`, treated as ordinary text (a special-token literal
    is explained as the characters it is made of). Normalization and pre-tokenization are those
    of the tokenizer; the ids of all pieces joined equal its `encode_ordinary`."""
    if len(text) > max_chars:
        raise LimitExceededError("characters of text to explain", max_chars, len(text))
    if normalization != "none":
        text = normal_forms.normalize(normalization, text)
    pieces = matches_of(pattern)(text) if pattern is not None else [text] if text else []
    return [explain_piece(vocab, p) for p in pieces]


def explain_piece(vocab: Vocabulary, piece: str) -> PieceSteps:
    data = piece.encode("utf-8")
    if vocab.rule == "ranks":
        return _explain_ranks(vocab, piece, data)
    return _explain_pairs(vocab, piece, data)


def _explain_pairs(vocab: Vocabulary, piece: str, data: bytes) -> PieceSteps:
    ids = [vocab.byte_ids[b] for b in data]
    parts = [data[i : i + 1] for i in range(len(data))]
    out = PieceSteps(piece, list(ids), list(parts))
    merges = vocab.merges
    while len(ids) > 1:
        ranks = [merges.get((a, b), _NONE) for a, b in pairwise(ids)]
        best = min(ranks)
        if best == _NONE:
            break
        i = ranks.index(best)
        merged = parts[i] + parts[i + 1]
        out.steps.append(Step(i, ids[i], ids[i + 1], best, best, merged))
        ids[i : i + 2] = [best]
        parts[i : i + 2] = [merged]
    out.ids.extend(ids)
    return out


def _explain_ranks(vocab: Vocabulary, piece: str, data: bytes) -> PieceSteps:
    encoder = vocab.encoder
    parts = [data[i : i + 1] for i in range(len(data))]
    out = PieceSteps(piece, [encoder[p] for p in parts], list(parts))
    while len(parts) > 1:
        ranks = [encoder.get(a + b, _NONE) for a, b in pairwise(parts)]
        best = min(ranks)
        if best == _NONE:
            break
        i = ranks.index(best)
        merged = parts[i] + parts[i + 1]
        out.steps.append(Step(i, encoder[parts[i]], encoder[parts[i + 1]], best, best, merged))
        parts[i : i + 2] = [merged]
    whole = encoder.get(data)
    if whole is not None and len(parts) > 1:
        out.steps.append(Step(0, -1, -1, whole, whole, data, "whole"))
        parts = [data]
    out.ids.extend(encoder[p] for p in parts)
    return out


def replay(piece: PieceSteps, upto: int | None = None) -> list[int]:
    """The symbols of a piece after its first `upto` steps (all of them by default)."""
    ids = list(piece.start)
    for step in piece.steps[:upto]:
        if step.kind == "whole":
            ids = [step.id]
        else:
            ids[step.at : step.at + 2] = [step.id]
    return ids


def inline_vocabulary(rule: Rule, merges: Sequence[Sequence[int]]) -> Vocabulary:
    """A small vocabulary over the identity byte ids from merges `[left, right, new]` given by a
    person. The new ids must be 256, 257, ... in order (a merge's id is its rank), each merge
    may only use ids defined before it, under `ranks` no two tokens may have the same bytes (the
    rule looks tokens up by their bytes), and no token may be longer than the longest text one
    may explain (`MAX_EXPLAIN_BYTES`): merges that join a token with itself double its length,
    so a few dozen of them would otherwise build gigabytes."""
    if len(merges) > MAX_INLINE_MERGES:
        raise LimitExceededError("inline merges", MAX_INLINE_MERGES, len(merges))
    data: list[bytes] = [bytes([b]) for b in range(256)]
    seen: dict[bytes, int] = {d: i for i, d in enumerate(data)}
    pairs: set[tuple[int, int]] = set()
    triples: list[tuple[int, int, int]] = []
    for n, merge in enumerate(merges):
        if len(merge) != 3:
            raise InputError(f"merge {n}: give [left, right, new], got {list(merge)}")
        left, right, new = merge
        if new != 256 + n:
            raise InputError(f"merge {n}: its new id must be {256 + n} (ids follow merge order)")
        for side in (left, right):
            if not 0 <= side < new:
                raise InputError(f"merge {n}: id {side} is not defined before it")
        if (left, right) in pairs:
            raise InputError(f"merge {n}: the pair [{left}, {right}] is merged twice")
        pairs.add((left, right))
        length = len(data[left]) + len(data[right])
        if length > MAX_EXPLAIN_BYTES:
            raise InputError(
                f"merge {n}: its token would be {length} bytes, longer than any text one may "
                f"explain ({MAX_EXPLAIN_CHARS} characters, at most {MAX_EXPLAIN_BYTES} bytes)"
            )
        joined = data[left] + data[right]
        if rule == "ranks" and joined in seen:
            raise InputError(
                f"merge {n}: under `ranks` its bytes {joined!r} are already token {seen[joined]}"
            )
        seen.setdefault(joined, new)
        data.append(joined)
        triples.append((left, right, new))
    return Vocabulary.build(rule, triples)
