"""Importing a SentencePiece BPE `.model` (Llama 2, Mistral v1/v2/v3/v7) as a format v2 file.

The model is read here (service.store.importers.sentencepiece_proto; no sentencepiece import) and
converted the way
Hugging Face's converter makes a `tokenizer.json` of it, which the tokenizer.json importer then
maps (service.store.importers.hf_tokenizer): the pieces are the vocabulary; the merges are derived
from the
scores (every split of a piece into two pieces is a merge, ranked by the piece's score, highest
first, as SentencePiece picks the pair whose joined piece scores highest); the normalizer puts
`▁` in front of the text and for every space; characters outside the vocabulary fall back to
their bytes' `<0xNN>` pieces; control and unknown pieces are special tokens. User-defined pieces
(Mistral v3's and v7's `[REF]`, `[REFERENCE_DOC_n]`) are added tokens split out of the raw text,
as in Hugging Face's (legacy) tokenizer.json of these models: SentencePiece matches them in the
normalized text instead, so around them the `▁` tokens differ (a text that starts with one gets
no `▁` of its own, the text after one gets one); everywhere else the ids are SentencePiece's.
Models this cannot reproduce exactly are refused: unigram, word and char models, models without
byte fallback, a normalization other than `identity`, whitespace removal or suffix whitespace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from service.errors import StoreError
from service.store.importers.hf_tokenizer import from_tokenizer_doc
from service.store.importers.sentencepiece_proto import (
    CONTROL,
    NORMAL,
    UNKNOWN,
    USER_DEFINED,
    SentencePieceModel,
)
from service.store.importers.sentencepiece_proto import read_model as read_sp_model
from service.store.importers.sources import Found, read_source, source_note

_MERGEABLE = (NORMAL, USER_DEFINED)


def from_sentencepiece(path: Path) -> Found:
    where = str(path)
    model = read_sp_model(read_source(path), where)
    _check_supported(model, where)
    return from_tokenizer_doc(tokenizer_doc(model), where, source_note(path))


def _check_supported(model: SentencePieceModel, where: str) -> None:
    def refuse(what: str, instead: str) -> None:
        raise StoreError(where, f"{what}: not supported; {instead}")

    if model.model_type != "bpe":
        refuse(
            f"trainer_spec.model_type is {model.model_type}",
            "only BPE SentencePiece models import (a unigram model's Viterbi segmentation "
            "is not implemented); its tokenizer.json will not import either",
        )
    if not model.byte_fallback:
        refuse("trainer_spec.byte_fallback is false", "BPE models with byte fallback only")
    if model.normalizer_name != "identity" and model.precompiled_charsmap:
        refuse(
            f"normalizer_spec.name is {model.normalizer_name}",
            "the `identity` normalization only (no precompiled character map)",
        )
    if model.remove_extra_whitespaces or not model.escape_whitespaces:
        refuse(
            "normalizer_spec.remove_extra_whitespaces on or escape_whitespaces off",
            "models that keep whitespace as it is and write it as ▁",
        )
    if model.whitespace_as_suffix:
        refuse("trainer_spec.treat_whitespace_as_suffix", "▁ as a prefix only")


def tokenizer_doc(model: SentencePieceModel) -> dict[str, Any]:
    """The Hugging Face `tokenizer.json` of a supported SentencePiece BPE model."""
    vocab = {p.piece: i for i, p in enumerate(model.pieces)}
    mergeable = {p.piece for p in model.pieces if p.type in _MERGEABLE}
    # a piece is cut only where both parts have the length of some mergeable piece: linear in
    # the piece's length, where making every split was quadratic (GBs for one long piece)
    lengths = {len(m) for m in mergeable}
    merges: list[tuple[float, int, str, str]] = []
    for i, p in enumerate(model.pieces):
        if p.type not in _MERGEABLE or len(p.piece) < 2:
            continue
        text, n = p.piece, len(p.piece)
        cuts = [(text[:k], text[k:]) for k in lengths if k < n and n - k in lengths]
        found = [(a, b) for a, b in cuts if a in mergeable and b in mergeable]
        found.sort(key=lambda ab: (vocab[ab[0]], vocab[ab[1]]))
        merges += [(-p.score, i, a, b) for a, b in found]
    merges.sort(key=lambda m: m[0])  # stable: highest score first, then as listed
    added = [
        {
            "id": i,
            "content": p.piece,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": p.type != USER_DEFINED,
        }
        for i, p in enumerate(model.pieces)
        if p.type in (CONTROL, UNKNOWN, USER_DEFINED)
    ]
    normalizers: list[dict[str, Any]] = [
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}
    ]
    decoders: list[dict[str, Any]] = [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if model.add_dummy_prefix:
        normalizers.insert(0, {"type": "Prepend", "prepend": "▁"})
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    unk = model.pieces[model.unk_id].piece if 0 <= model.unk_id < len(model.pieces) else None
    return {
        "version": "1.0",
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [[a, b] for _, _, a, b in merges],
        },
    }
