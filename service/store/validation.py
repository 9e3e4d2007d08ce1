"""Rules of format v1 that a JSON Schema cannot express; every error names the offending entry."""

from __future__ import annotations

import regex

from service.errors import FormatError
from service.store.fileformat import TokenizerFile


def validate(tf: TokenizerFile, path: str) -> None:
    """Raise FormatError(path, entry, reason) at the first broken rule.

    - `pattern` compiles;
    - `byte_ids`: 256 distinct ids (a permutation of 0..255 for `pairs`);
    - `tokens` (extra tokens, `ranks` only): unique ids, non-empty hex bytes;
    - `merges`: both children defined earlier, no pair twice, new ids consecutive from 256
      (`pairs`) or strictly increasing and unused (`ranks`); for `ranks` no two tokens with the
      same bytes;
    - `special_tokens`: non-empty literals whose ids collide with nothing.
    """

    def fail(entry: str, reason: str) -> FormatError:
        return FormatError(path, entry, reason)

    if tf.pattern is not None:
        try:
            regex.compile(tf.pattern)
        except regex.error as exc:
            raise fail("pattern", f"does not compile: {exc}") from None

    byte_ids = list(range(256)) if tf.byte_ids is None else tf.byte_ids
    if len(byte_ids) != 256:
        raise fail("byte_ids", f"must list 256 ids (one per byte value), has {len(byte_ids)}")
    if tf.rule == "pairs" and sorted(byte_ids) != list(range(256)):
        raise fail("byte_ids", "for the pairs rule the byte ids must be 0..255 in some order")
    data: dict[int, bytes] = {}
    for b, tid in enumerate(byte_ids):
        if tid in data:
            raise fail(f"byte_ids[{b}]", f"id {tid} is already the id of byte {data[tid][0]}")
        data[tid] = bytes([b])

    if tf.tokens and tf.rule != "ranks":
        raise fail("tokens", "extra tokens are only allowed with the ranks rule")
    for i, (tid, hexbytes) in enumerate(tf.tokens):
        if tid in data:
            raise fail(f"tokens[{i}]", f"id {tid} is defined twice")
        try:
            token = bytes.fromhex(hexbytes)
        except ValueError:
            raise fail(f"tokens[{i}]", f"{hexbytes!r} is not hex") from None
        if len(token) < 2:
            raise fail(f"tokens[{i}]", "an extra token must have at least two bytes")
        data[tid] = token

    seen_pairs: set[tuple[int, int]] = set()
    previous = -1
    for i, (left, right, new) in enumerate(tf.merges):
        entry = f"merges[{i}]"
        for child in (left, right):
            if child not in data:
                raise fail(entry, f"child id {child} is not defined before this merge")
        if (left, right) in seen_pairs:
            raise fail(entry, f"pair ({left}, {right}) is listed twice")
        if tf.rule == "pairs" and new != 256 + i:
            raise fail(entry, f"new id must be {256 + i} (consecutive from 256), is {new}")
        if tf.rule == "ranks" and new <= previous:
            raise fail(entry, f"new id {new} must be greater than the previous one ({previous})")
        if new in data:
            raise fail(entry, f"new id {new} is already defined")
        seen_pairs.add((left, right))
        data[new] = data[left] + data[right]
        previous = new

    if tf.rule == "ranks":
        owner: dict[bytes, int] = {}
        for tid, token in data.items():
            if token in owner:
                raise fail(
                    f"token {tid}", f"has the same bytes {token!r} as token {owner[token]}"
                )
            owner[token] = tid

    special_ids: dict[int, str] = {}
    for text, tid in tf.special_tokens.items():
        entry = f"special_tokens[{text!r}]"
        if not text:
            raise fail(entry, "a special token needs a non-empty literal")
        if tid in data:
            raise fail(entry, f"id {tid} is also the id of an ordinary token")
        if tid in special_ids:
            raise fail(entry, f"id {tid} is also the id of {special_ids[tid]!r}")
        special_ids[tid] = text
