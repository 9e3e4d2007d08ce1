"""The same ranks vocabulary gives the same tokenizer file whichever upstream file it comes from:
a tiktoken rank file or a tokenizer.json converted from it (`ignore_merges`)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from service.store.importers.gpt2 import gpt2_byte_alphabet
from service.store.importers.hf_tokenizer import from_tokenizer_json
from service.store.importers.ranks import from_tiktoken

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
