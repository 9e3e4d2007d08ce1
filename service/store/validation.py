"""Rules of format v1 that a JSON Schema cannot express; every error names the offending entry.

- `pattern` compiles;
- `byte_ids`: 256 distinct ids (a permutation of 0..255 for `pairs`);
- `tokens` (extra tokens, `ranks` only): unique ids, at least two bytes of hex each;
- `merges`: both children defined earlier, no pair twice, new ids consecutive from 256 (`pairs`)
  or strictly increasing and unused (`ranks`); for `ranks`, no two tokens with the same bytes;
- `special_tokens`: non-empty literals whose ids collide with nothing.

The merge rules are the costly part (200,000 merges for o200k): the native extension checks them
in one pass and builds every token's bytes on the way (`native.build_tokens`). It only answers
"verified" or "not verified"; on "not verified" (or without the extension) the checks below run
and name the broken entry, so the errors are always these functions' and an accepted file is one
they accept.
"""

from __future__ import annotations

from collections.abc import Set
from typing import NamedTuple

import regex

from service.bpe.engine import native
from service.bpe.engine.matching import STALLS, stalls
from service.bpe.vocab import IDENTITY_BYTE_IDS
from service.errors import FormatError
from service.store.formats.tokenizer import TokenizerFile
from service.store.pipeline.component import BrokenRule as _Rule
from service.store.pipeline.rules import check_added, check_byte_fallback, check_version


class Validated(NamedTuple):
    """What validation computed on the way, so building need not compute it again."""

    tokens: list[bytes | None]  # every token's bytes by id, None where no token has that id
    triples: bytes | None  # the merges as native uint32s (left, right, new, ...), when known


def validate(
    tf: TokenizerFile, path: str, *, verified: list[bytes | None] | None = None
) -> Validated:
    """Raise FormatError(path, entry, reason) at the first broken rule. `verified`: the tokens
    this found for a file with the same rule, byte ids, extra tokens and merges
    (service.store.sharing), whose merges need no second check."""
    try:
        check_version(tf)
        if tf.pattern is not None:
            _check_pattern(tf.pattern)
        tokens = _check_byte_ids(tf)
        fallback_only = check_byte_fallback(tf, tokens)
        _check_extra_tokens(tf, tokens)
        built: tuple[list[bytes | None], bytes | None] | None = None
        if verified is not None:
            built = (verified, None)
        elif tf.format_version == 1:  # the C pass knows v1's merge rules
            built = native.build_tokens(tf.rule, tokens, tf.merges)
        elif tf.byte_fallback is None:  # v2: C's ranks rules are stricter than v2's pairs rules,
            built = native.build_tokens("ranks", tokens, tf.merges)  # so "verified" holds here
        by_id: list[bytes | None]
        triples = None
        if built is not None:
            by_id, triples = built
        else:  # not verified in C: the reference checks find and name the broken entry
            _check_merges(tf, tokens, fallback_only)
            if tf.rule == "ranks":
                _check_unique_bytes(tokens)
            by_id = [None] * (max(tokens) + 1)
            for tid, data in tokens.items():
                by_id[tid] = data
        _check_specials(tf, by_id)
        check_added(tf, by_id)
    except _Rule as broken:
        raise FormatError(path, broken.entry, broken.reason) from None
    return Validated(by_id, triples)


def _check_pattern(pattern: str) -> None:
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise _Rule("pattern", f"does not compile: {exc}") from None
    if stalls(pattern):
        raise _Rule("pattern", STALLS)


def _check_byte_ids(tf: TokenizerFile) -> dict[int, bytes]:
    byte_ids = tf.ids_of_bytes
    if len(byte_ids) != 256:
        raise _Rule("byte_ids", f"must list 256 ids (one per byte value), has {len(byte_ids)}")
    if (
        tf.rule == "pairs"
        and tf.format_version == 1
        and sorted(byte_ids) != list(IDENTITY_BYTE_IDS)
    ):
        raise _Rule("byte_ids", "for the pairs rule the byte ids must be 0..255 in some order")
    tokens: dict[int, bytes] = {}
    for b, tid in enumerate(byte_ids):
        if tid in tokens:
            raise _Rule(f"byte_ids[{b}]", f"id {tid} is already the id of byte {tokens[tid][0]}")
        tokens[tid] = bytes([b])
    return tokens


def _check_extra_tokens(tf: TokenizerFile, tokens: dict[int, bytes]) -> None:
    if tf.tokens and tf.rule != "ranks" and tf.format_version == 1:
        raise _Rule("tokens", "extra tokens are only allowed with the ranks rule (format v1)")
    for i, (tid, hexbytes) in enumerate(tf.tokens):
        if tid in tokens:
            raise _Rule(f"tokens[{i}]", f"id {tid} is defined twice")
        try:
            token = bytes.fromhex(hexbytes)
        except ValueError:
            raise _Rule(f"tokens[{i}]", f"{hexbytes!r} is not hex") from None
        if len(token) < 2 - (tf.format_version - 1):
            raise _Rule(f"tokens[{i}]", "an extra token must have at least two bytes")
        tokens[tid] = token


def _check_merges(
    tf: TokenizerFile, tokens: dict[int, bytes], fallback_only: Set[int] = frozenset()
) -> None:
    seen: set[tuple[int, int]] = set()
    previous = -1
    free = tf.rule == "pairs" and tf.format_version == 2
    for i, (left, right, new) in enumerate(tf.merges):
        entry = f"merges[{i}]"
        for child in (left, right):
            if child not in tokens:
                raise _Rule(entry, f"child id {child} is not defined before this merge")
            if child in fallback_only:
                raise _Rule(entry, f"child id {child} is a byte-fallback token")
        if (left, right) in seen:
            raise _Rule(entry, f"pair ({left}, {right}) is listed twice")
        if free:  # v2: any id, or again the id of a token with these bytes
            if new in tokens and tokens[new] != tokens[left] + tokens[right]:
                raise _Rule(entry, f"new id {new} is already a token with other bytes")
            seen.add((left, right))
            tokens[new] = tokens[left] + tokens[right]
            continue
        if tf.rule == "pairs" and new != 256 + i:
            raise _Rule(entry, f"new id must be {256 + i} (consecutive from 256), is {new}")
        if tf.rule == "ranks" and new <= previous:
            raise _Rule(entry, f"new id {new} must be greater than the previous one ({previous})")
        if new in tokens:
            raise _Rule(entry, f"new id {new} is already defined")
        seen.add((left, right))
        tokens[new] = tokens[left] + tokens[right]
        previous = new


def _check_unique_bytes(tokens: dict[int, bytes]) -> None:
    if len(set(tokens.values())) == len(tokens):
        return
    owner: dict[bytes, int] = {}
    for tid, token in tokens.items():
        if token in owner:
            raise _Rule(f"token {tid}", f"has the same bytes {token!r} as token {owner[token]}")
        owner[token] = tid


def _check_specials(tf: TokenizerFile, tokens: list[bytes | None]) -> None:
    owner: dict[int, str] = {}
    for text, tid in tf.special_tokens.items():
        entry = f"special_tokens[{text!r}]"
        if not text:
            raise _Rule(entry, "a special token needs a non-empty literal")
        if tid < len(tokens) and tokens[tid] is not None:
            raise _Rule(entry, f"id {tid} is also the id of an ordinary token")
        if tid in owner:
            raise _Rule(entry, f"id {tid} is also the id of {owner[tid]!r}")
        owner[tid] = text
    for text in tf.nonspecial_tokens:
        if text not in tf.special_tokens:
            raise _Rule(f"nonspecial_tokens[{text!r}]", "is not one of special_tokens")
