"""Importing byte-level BPE (GPT-2's byte alphabet) as a `pairs` tokenizer: a Hugging Face
`tokenizer.json`, or GPT-2's original `encoder.json` + `vocab.bpe`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from service.bpe.engine.patterns import GPT2_PATTERN
from service.bpe.pipeline.normalizers import Normalization
from service.errors import StoreError
from service.store.importers.sources import Found, read_json, read_source, source_note


def gpt2_byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-to-unicode map, reversed: printable stand-in character -> byte value."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return {c: b for b, c in chars.items()}


def from_byte_level(
    vocab: Mapping[str, int],
    merges: Sequence[tuple[str, str]],
    *,
    where: str,
    pattern: str | None,
    special_tokens: Mapping[str, int],
    normalization: Normalization,
    source: str,
    nonspecial_tokens: Sequence[str] = (),
) -> Found:
    """A `pairs` tokenizer from a byte-level BPE vocabulary and merge list (GPT-2 alphabet)."""
    alphabet = gpt2_byte_alphabet()
    by_byte = {b: c for c, b in alphabet.items()}
    try:
        byte_ids = [vocab[by_byte[b]] for b in range(256)]
        triples = [(vocab[a], vocab[b], vocab[a + b]) for a, b in merges]
    except KeyError as exc:
        raise StoreError(
            where, f"token {exc.args[0]!r} is used but not in the vocabulary"
        ) from None
    found = Found("pairs", triples, pattern, normalization, dict(special_tokens), source)
    return msgspec.structs.replace(
        found, byte_ids=byte_ids, nonspecial_tokens=list(nonspecial_tokens)
    )


def from_hf_json(path: Path, *, pattern: str | None = None) -> Found:
    """A `pairs` tokenizer from a Hugging Face byte-level BPE `tokenizer.json`.

    The split regex, the NFC/NFKC normalizer and the added tokens (all as special tokens) come
    from the file; `pattern` overrides the regex.
    """
    where = str(path)
    doc = read_json(path)
    field = "model"
    try:
        model = doc.get("model") or {}
        if model.get("type") != "BPE":
            raise StoreError(where, f"model.type: {model.get('type')!r} is not BPE")
        if model.get("ignore_merges"):
            raise StoreError(
                where, "model.ignore_merges: true is not the pairs rule; not supported"
            )
        field = "model.merges"
        merges = [
            tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]
        ]
        if any(len(m) != 2 for m in merges):
            raise StoreError(where, "model.merges: every merge must name two tokens")
        field = "model.vocab"
        vocab = dict(model["vocab"])
        field = "normalizer"
        normalizer = (doc.get("normalizer") or {}).get("type", "none")
        if normalizer not in ("NFC", "NFKC", "none"):
            raise StoreError(
                where, f"normalizer.type: {normalizer!r} is not supported (NFC, NFKC or none)"
            )
        field = "added_tokens"
        specials = {str(t["content"]): int(t["id"]) for t in doc.get("added_tokens", [])}
        nonspecial = [
            str(t["content"]) for t in doc.get("added_tokens", []) if t.get("special") is False
        ]
        field = "pre_tokenizer"
        split = pattern if pattern is not None else _hf_split_pattern(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StoreError(
            where, f"{field}: missing or malformed ({type(exc).__name__}: {exc})"
        ) from None
    return from_byte_level(
        vocab,
        merges,  # type: ignore[arg-type]
        where=where,
        pattern=split,
        special_tokens=specials,
        nonspecial_tokens=nonspecial,
        normalization=normalizer,
        source=source_note(path),
    )


def _hf_split_pattern(doc: dict[str, Any]) -> str | None:
    pre = doc.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", [pre])
    for step in steps:
        if step.get("type") == "Split" and "Regex" in step.get("pattern", {}):
            return str(step["pattern"]["Regex"])
    for step in steps:
        if step.get("type") == "ByteLevel" and step.get("use_regex", True):
            return GPT2_PATTERN
    return None


def from_gpt2(
    encoder_json: Path,
    vocab_bpe: Path,
    *,
    pattern: str | None,
    special_tokens: Mapping[str, int],
) -> Found:
    """A `pairs` tokenizer from GPT-2's original `encoder.json` and `vocab.bpe`."""
    vocab = read_json(encoder_json)
    if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
        raise StoreError(str(encoder_json), "must be a JSON object of token -> id")
    try:
        lines = read_source(vocab_bpe).decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise StoreError(str(vocab_bpe), f"is not UTF-8 text: {exc}") from None
    merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
    for lineno, merge in enumerate(merges, 1):
        if len(merge) != 2:
            raise StoreError(
                str(vocab_bpe), f"merge {lineno}: must be two tokens separated by a space"
            )
    return from_byte_level(
        vocab,
        merges,  # type: ignore[arg-type]
        where=str(vocab_bpe),
        pattern=pattern,
        special_tokens=special_tokens,
        normalization="none",
        source=source_note(encoder_json, vocab_bpe),
    )
