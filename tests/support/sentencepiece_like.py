"""Small SentencePiece-style tokenizers whose decoder changes the text, built for the tests.

Gemma 3's and Llama 2's files are not redistributed here (tests/data/README.md), so their
construction is trained with Hugging Face `tokenizers` on a slice of the corpus (character merges,
`▁` for spaces, `<0xNN>` byte fallback) and imported as format v2 files into a store:

- `sp-metaspace@1`: `▁` put in front of the text and for every space; a `Metaspace` decoder,
  which drops the `▁` of the first token (so a text's leading space does not come back);
- `sp-gemma@1`: `▁` for every space and nothing in front; a `Replace` decoder, every `▁` a space.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, models, normalizers, trainers
from tokenizers import pre_tokenizers as pre

from service.store.importers.hf_tokenizer import from_tokenizer_json
from service.store.importers.sources import Naming
from service.store.manifest import add_to_store
from tests.support.testdata import corpus_text

SYNTHETIC = ("sp-metaspace@1", "sp-gemma@1")
_CORPUS = ("en_shakespeare.txt", "zh_manpages.txt", "mixed_emoji_test.txt", "hi_devanagari.txt")


def _trained(normalizer: Any, decoder: list[dict[str, Any]]) -> Tokenizer:
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre.Split("▁", "merged_with_next")
    trainer = trainers.BpeTrainer(
        vocab_size=1000, special_tokens=["<unk>", "<s>"], show_progress=False, limit_alphabet=200
    )
    text = "".join(corpus_text(n)[:4000] for n in _CORPUS)
    tok.train_from_iterator(text.splitlines(), trainer)
    doc = json.loads(tok.to_str())
    vocab = doc["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    doc["decoder"] = {"type": "Sequence", "decoders": decoder}
    return Tokenizer.from_str(json.dumps(doc))


def build_store(store: Path) -> Path:
    """Write both tokenizers into `store` (created); return it."""
    metaspace = _trained(
        normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]),
        [
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
        ],
    )
    gemma = _trained(
        normalizers.Replace(" ", "▁"),
        [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
        ],
    )
    for ref, tok in zip(SYNTHETIC, (metaspace, gemma), strict=True):
        name, version = ref.split("@")
        source = store / f"{name}.tokenizer.json"
        store.mkdir(parents=True, exist_ok=True)
        tok.save(str(source))
        add_to_store(store, from_tokenizer_json(source).named(Naming(name, version)))
        source.unlink()
    return store
