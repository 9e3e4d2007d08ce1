"""The same ranks vocabulary gives the same tokenizer file whichever upstream file it comes from:
a tiktoken rank file or a tokenizer.json converted from it (`ignore_merges`); a token of 2**16
bytes is split, and checked, with copies linear in its length, and a tekken file holding it
imports and encodes it to its id."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from service.runtime import engine_factory
from service.store.importers.gpt2 import gpt2_byte_alphabet
from service.store.importers.hf_tokenizer import from_tokenizer_doc, from_tokenizer_json
from service.store.importers.imports import import_files
from service.store.importers.ranks import from_tiktoken, ranks_merges
from service.store.importers.sources import Naming
from service.store.loader import load_store
from service.store.manifest import add_to_store

# bytes 0..255, then "ab", "bcd", "abcd": tiktoken's rule leaves "abcd" in three parts (ab, c,
# d), yet it splits into two lower tokens (a + bcd); "bcd" splits into none
TOKENS = [bytes([b]) for b in range(256)] + [b"ab", b"bcd", b"abcd"]


def converted(path: Path) -> None:
    """A tokenizer.json as the reference's converter writes one: every split of each token into
    two tokens listed as a merge, in the order of the ids they make, and `ignore_merges`."""
    spell = {b: c for c, b in gpt2_byte_alphabet().items()}
    ranks = {t: i for i, t in enumerate(TOKENS)}
    text = lambda t: "".join(spell[x] for x in t)  # noqa: E731
    merges = [
        [text(t[:i]), text(t[i:])]
        for t in TOKENS
        for i in range(1, len(t))
        if t[:i] in ranks and t[i:] in ranks
    ]
    doc = {
        "model": {"type": "BPE", "vocab": {text(t): i for t, i in ranks.items()},
                  "merges": merges, "ignore_merges": True},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "decoder": {"type": "ByteLevel"},
    }  # fmt: skip
    path.write_text(json.dumps(doc), "utf-8")


def test_a_tiktoken_file_and_its_converted_tokenizer_json_give_the_same_vocabulary(
    tmp_path: Path,
) -> None:
    ranks_file = tmp_path / "tiny.tiktoken"
    ranks_file.write_text(
        "".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(TOKENS)), "utf-8"
    )
    converted(tmp_path / "tokenizer.json")
    a = from_tiktoken(ranks_file, pattern=None, special_tokens={})
    b = from_tokenizer_json(tmp_path / "tokenizer.json")
    assert (a.rule, a.byte_ids, a.merges, a.tokens) == (b.rule, b.byte_ids, b.merges, b.tokens)
    assert (97, 257, 258) in a.merges  # a + bcd: the split the rule does not reach
    assert a.tokens == [(257, b"bcd".hex())]


class Counted(bytes):
    """Token bytes that count the bytes every slice of them copies."""

    copied = 0

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        part = super().__getitem__(key)
        if isinstance(key, slice):
            Counted.copied += len(part)
        return part


class CountedText(str):
    """A token's text that counts the characters every slice of it copies (and stays itself
    through `str()`, as the importer reads the vocabulary)."""

    copied = 0

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        part = super().__getitem__(key)
        if isinstance(key, slice):
            CountedText.copied += len(part)
        return part

    def __str__(self) -> str:
        return self


def long_chain(n: int) -> list[bytes]:
    """The bytes, "ab", a run of "a" doubled up to 2**n, then that run and "b": tiktoken's rule
    leaves the last one in n + 1 parts (ab first, then powers of two), so its merge is the
    first split into two tokens, found only at its last byte."""
    run = [b"a" * 2**j for j in range(1, n + 1)]
    return [bytes([b]) for b in range(256)] + [b"ab", *run, run[-1] + b"b"]


def test_a_long_token_is_split_with_copies_linear_in_its_length() -> None:
    tokens = long_chain(16)
    Counted.copied = 0
    _, merges, extra = ranks_merges({Counted(t): i for i, t in enumerate(tokens)}, "chain")
    assert merges[-1] == (len(tokens) - 2, ord("b"), len(tokens) - 1) and extra == []
    total = sum(map(len, tokens))  # 196,865 bytes
    assert Counted.copied < 4 * total  # a cut at every position: 2.1e9 bytes (10,900 x total)


def test_a_long_token_of_a_converted_tokenizer_json_is_checked_with_linear_copies() -> None:
    """`ignore_merges`: the check that every split of a token into two tokens is listed."""
    tokens = long_chain(16)
    spell = {b: c for c, b in gpt2_byte_alphabet().items()}
    text = {t: "".join(spell[x] for x in t) for t in tokens}
    lengths = {len(t) for t in tokens}
    merges = [
        [text[t[:i]], text[t[i:]]]
        for t in tokens
        for i in sorted(lengths)
        if 0 < i < len(t) and t[:i] in text and t[i:] in text
    ]
    doc = {
        "model": {"type": "BPE", "vocab": {CountedText(text[t]): i for i, t in enumerate(tokens)},
                  "merges": merges, "ignore_merges": True},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "decoder": {"type": "ByteLevel"},
    }  # fmt: skip
    CountedText.copied = 0
    found = from_tokenizer_doc(doc, "chain", "")
    assert found.rule == "ranks" and found.merges[-1] == (len(tokens) - 2, 98, len(tokens) - 1)
    total = sum(map(len, tokens))  # 196,865 characters
    assert CountedText.copied < 4 * total  # a cut at every position: 5.0e9 (25,000 x total)


def test_a_long_tekken_token_imports_and_encodes_to_its_id(tmp_path: Path) -> None:
    tokens = long_chain(16)
    doc = {
        "config": {"pattern": ".+", "default_num_special_tokens": 1,
                   "default_vocab_size": 1 + len(tokens), "version": "v11"},
        "vocab": [{"rank": i, "token_bytes": base64.b64encode(t).decode()}
                  for i, t in enumerate(tokens)],
        "special_tokens": [{"rank": 0, "token_str": "<unk>"}],
    }  # fmt: skip
    (tmp_path / "tekken.json").write_text(json.dumps(doc), "utf-8")
    found = import_files("tekken", [tmp_path / "tekken.json"], Naming("t", "1"))
    last = len(tokens)  # its id: rank + the one special token
    assert found.merges[-1] == (last - 1, 1 + ord("b"), last)
    add_to_store(tmp_path / "store", found)
    tok = load_store([tmp_path / "store"], engine_factory("python")).resolve("t").tokenizer
    assert tok.encode(tokens[-1].decode()) == [last]
    assert tok.decode([last]) == tokens[-1].decode()
