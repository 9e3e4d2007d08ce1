"""SentencePiece-style BPE on a byte-level engine: characters rebuilt from their bytes.

A SentencePiece BPE vocabulary merges characters, and a character that is no token falls back to
its bytes' `<0xNN>` tokens. The engines merge bytes. Synthetic merges, ranked before every real
merge, rebuild each multi-byte character that is a token from its bytes (lead + continuation ->
prefix, prefix + continuation -> ... -> the character); UTF-8 is prefix-free and a text's bytes
are whole characters, so they rebuild exactly the characters of the text that are tokens. A
character that is not a token stops as a synthetic prefix id (or a lone byte), which `expand`
turns back into its bytes' fallback ids. Exact as long as no real merge involves a fallback token
(the store checks it), since then nothing else could have merged those bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def synthetic_merges(
    chars: Mapping[int, bytes], byte_ids: Sequence[int], fallback: Sequence[int], first_id: int
) -> tuple[list[tuple[int, int, int]], dict[int, tuple[int, ...]]]:
    """(merges to rank first, synthetic id -> its fallback ids). `chars`: id -> the UTF-8 bytes of
    one multi-byte character that is a token; `byte_ids`: the id each byte starts as; fresh ids
    for prefixes count from `first_id`."""
    made: dict[bytes, int] = {}
    merges: list[tuple[int, int, int]] = []
    expand: dict[int, tuple[int, ...]] = {}
    fresh = first_id
    for tid, data in sorted(chars.items()):
        for k in range(2, len(data) + 1):
            prefix = data[:k]
            if prefix in made:
                continue
            left = byte_ids[data[0]] if k == 2 else made[data[: k - 1]]
            if k == len(data):
                new = tid
            else:
                new, fresh = fresh, fresh + 1
                expand[new] = tuple(fallback[b] for b in prefix)
            made[prefix] = new
            merges.append((left, byte_ids[data[k - 1]], new))
    return merges, expand


def one_character(data: bytes) -> bool:
    """Whether `data` is the UTF-8 of exactly one character of two or more bytes."""
    try:
        return len(data) > 1 and len(data.decode("utf-8")) == 1
    except UnicodeDecodeError:
        return False
