"""Importers: tiktoken rank files, Hugging Face byte-level BPE `tokenizer.json`, GPT-2's
`encoder.json` + `vocab.bpe`. Each returns a `TokenizerFile`; the CLI writes it to the store.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from service.bpe.merge import merge_ranks
from service.bpe.tokenizer import Normalization
from service.errors import StoreError
from service.store.fileformat import Metadata, TokenizerFile
from service.store.manifest import sha256_hex
from service.store.presets import GPT2_PATTERN


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def source_note(*paths: Path) -> str:
    return "; ".join(f"{p.name} sha256:{sha256_hex(p.read_bytes())}" for p in paths)


def from_tiktoken(
    path: Path,
    *,
    name: str,
    version: str,
    pattern: str | None,
    special_tokens: Mapping[str, int],
    normalization: Normalization = "none",
    metadata: Metadata | None = None,
) -> TokenizerFile:
    """A `ranks` tokenizer from a `.tiktoken` file (`base64(token) rank` per line).

    Every multi-byte token becomes a merge of the two parts that tiktoken's own rule leaves when
    only lower ranks may merge; a token with no such split keeps its bytes in `tokens`.
    """
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            token_b64, rank_text = line.split()
            ranks[base64.b64decode(token_b64, validate=True)] = int(rank_text)
        except (ValueError, binascii.Error):
            raise StoreError(str(path), f"line {lineno} is not `base64 rank`") from None
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise StoreError(str(path), f"no rank for the single byte(s) {missing[:8]}")
    known = {bytes([b]): ranks[bytes([b])] for b in range(256)}
    merges: list[tuple[int, int, int]] = []
    extra: list[tuple[int, str]] = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) == 1:
            continue
        parts = merge_ranks(token, known)
        if len(parts) != 2:
            parts = next(
                (
                    [known[token[:i]], known[token[i:]]]
                    for i in range(1, len(token))
                    if token[:i] in known and token[i:] in known
                ),
                [],
            )
        if parts:
            merges.append((parts[0], parts[1], rank))
        else:
            extra.append((rank, token.hex()))
        known[token] = rank
    return TokenizerFile(
        name=name,
        version=version,
        rule="ranks",
        pattern=pattern,
        normalization=normalization,
        special_tokens=dict(special_tokens),
        metadata=metadata or Metadata(source=source_note(path), created=today()),
        byte_ids=[ranks[bytes([b])] for b in range(256)],
        tokens=extra,
        merges=merges,
    )


def gpt2_byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-to-unicode map, reversed: printable stand-in character -> byte value."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]  # fmt: skip
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
    name: str,
    version: str,
    pattern: str | None,
    special_tokens: Mapping[str, int],
    normalization: Normalization,
    metadata: Metadata,
) -> TokenizerFile:
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
    return TokenizerFile(
        name=name,
        version=version,
        rule="pairs",
        pattern=pattern,
        normalization=normalization,
        special_tokens=dict(special_tokens),
        metadata=metadata,
        byte_ids=byte_ids,
        merges=triples,
    )


def from_hf_json(
    path: Path, *, name: str, version: str, pattern: str | None = None
) -> TokenizerFile:
    """A `pairs` tokenizer from a Hugging Face byte-level BPE `tokenizer.json`.

    The split regex, the NFC/NFKC normalizer and the added tokens (all as special tokens) come
    from the file; `pattern` overrides the regex.
    """
    where = str(path)
    doc: dict[str, Any] = json.loads(path.read_bytes())
    model = doc.get("model") or {}
    if model.get("type") != "BPE":
        raise StoreError(where, f"model type {model.get('type')!r} is not BPE")
    if model.get("ignore_merges"):
        raise StoreError(where, "ignore_merges=true is not the pairs rule; not supported")
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    normalizer = (doc.get("normalizer") or {}).get("type", "none")
    if normalizer not in ("NFC", "NFKC", "none"):
        raise StoreError(where, f"normalizer {normalizer!r} is not supported (NFC, NFKC or none)")
    return from_byte_level(
        model["vocab"],
        merges,  # type: ignore[arg-type]
        where=where,
        name=name,
        version=version,
        pattern=pattern if pattern is not None else _hf_split_pattern(doc),
        special_tokens={t["content"]: t["id"] for t in doc.get("added_tokens", [])},
        normalization=normalizer,
        metadata=Metadata(source=source_note(path), created=today()),
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
    name: str,
    version: str,
    pattern: str | None,
    special_tokens: Mapping[str, int],
) -> TokenizerFile:
    """A `pairs` tokenizer from GPT-2's original `encoder.json` and `vocab.bpe`."""
    vocab: dict[str, int] = json.loads(encoder_json.read_bytes())
    lines = vocab_bpe.read_text("utf-8").splitlines()
    merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
    return from_byte_level(
        vocab,
        merges,  # type: ignore[arg-type]
        where=str(vocab_bpe),
        name=name,
        version=version,
        pattern=pattern,
        special_tokens=special_tokens,
        normalization="none",
        metadata=Metadata(source=source_note(encoder_json, vocab_bpe), created=today()),
    )
