"""Importing ranks (tiktoken's `base64(token) rank` lines, or any bytes -> rank table) as a
`ranks` tokenizer."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from pathlib import Path

import msgspec

from service.bpe.merge import merge_ranks
from service.bpe.pipeline.normalizers import Normalization
from service.errors import StoreError
from service.store.importers.sources import Found, read_source, source_note


def from_tiktoken(
    path: Path,
    *,
    pattern: str | None,
    special_tokens: Mapping[str, int],
    normalization: Normalization = "none",
) -> Found:
    """A `ranks` tokenizer from a `.tiktoken` file (`base64(token) rank` per line)."""
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(read_source(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            token_b64, rank_text = line.split()
            ranks[base64.b64decode(token_b64, validate=True)] = int(rank_text)
        except (ValueError, binascii.Error):
            raise StoreError(str(path), f"line {lineno} is not `base64 rank`") from None
    return from_ranks(
        path,
        ranks,
        pattern=pattern,
        special_tokens=special_tokens,
        normalization=normalization,
        source=source_note(path),
    )


def from_ranks(
    path: Path,
    ranks: Mapping[bytes, int],
    *,
    pattern: str | None,
    special_tokens: Mapping[str, int],
    normalization: Normalization,
    source: str,
) -> Found:
    """A `ranks` tokenizer from token bytes -> rank (the rank is the id)."""
    byte_ids, merges, extra = ranks_merges(ranks, str(path))
    found = Found("ranks", merges, pattern, normalization, dict(special_tokens), source)
    return msgspec.structs.replace(found, byte_ids=byte_ids, tokens=extra)


def ranks_merges(
    ranks: Mapping[bytes, int], where: str
) -> tuple[list[int], list[tuple[int, int, int]], list[tuple[int, str]]]:
    """The byte ids, merges and extra tokens of a ranks vocabulary (token bytes -> rank), the
    one way every importer writes them (tiktoken files, tekken files, tokenizer.json with
    `ignore_merges`): every multi-byte token becomes a merge of the two parts that tiktoken's
    own rule leaves when only lower ranks may merge, else of the first split into two lower
    tokens; a token with no such split keeps its bytes in `tokens`."""
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise StoreError(where, f"no rank for the single byte(s) {missing[:8]}")
    known = {bytes([b]): ranks[bytes([b])] for b in range(256)}
    lengths = {1}  # the lengths of the tokens in `known`
    merges: list[tuple[int, int, int]] = []
    extra: list[tuple[int, str]] = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) == 1:
            continue
        parts = merge_ranks(token, known)
        if len(parts) != 2:
            parts = _first_split(token, known, lengths)
        if parts:
            merges.append((parts[0], parts[1], rank))
        else:
            extra.append((rank, token.hex()))
        known[token] = rank
        lengths.add(len(token))
    return [ranks[bytes([b])] for b in range(256)], merges, extra


def _first_split(token: bytes, known: Mapping[bytes, int], lengths: set[int]) -> list[int]:
    """The ids of the first split of `token` into two `known` tokens, shortest left part first
    ([] if there is none). Only a cut where both parts have the length of a known token can be
    one, so the token is sliced there only: slicing it at every cut was quadratic in its length
    (a tekken token of 1 MB took over 95 s to import)."""
    n = len(token)
    for cut in range(1, n):
        if cut not in lengths or n - cut not in lengths:
            continue
        left, right = known.get(token[:cut]), known.get(token[cut:])
        if left is not None and right is not None:
            return [left, right]
    return []
