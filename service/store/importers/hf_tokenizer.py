"""Importing a Hugging Face `tokenizer.json` (BPE model) as a format v2 file: each component is
mapped to our own steps, or refused with its JSON path and what is supported instead.

Byte-level files (a `ByteLevel` pre-tokenizer: GPT-2, Qwen, Llama 3, DeepSeek) spell token bytes
in GPT-2's alphabet; the others (SentencePiece-style: Gemma, Llama 2, Mistral) spell characters,
with `byte_fallback` to `<0xNN>` tokens. `ignore_merges: true` (Llama 3) is the `ranks` rule.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from service.errors import StoreError
from service.store.importers.gpt2 import gpt2_byte_alphabet
from service.store.importers.ranks import ranks_merges
from service.store.importers.sources import Found, read_json, source_note
from service.store.pipeline.added_tokens import import_added
from service.store.pipeline.component import Refuser, flat_steps
from service.store.pipeline.decoders import import_decoder
from service.store.pipeline.normalizers import import_normalizers
from service.store.pipeline.post_processors import import_template
from service.store.pipeline.pre_tokenizers import import_pre_tokenizers

_BYTE_TOKEN = "<0x{:02X}>"
Speller = Callable[[str], bytes]  # a token's string in the file -> its bytes


def from_tokenizer_json(path: Path) -> Found:
    return from_tokenizer_doc(read_json(path), str(path), source_note(path))


def from_tokenizer_doc(doc: Any, where: str, source: str) -> Found:
    """A parsed tokenizer.json (or one built in memory: service.store.importers.sentencepiece)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise StoreError(where, "model: missing; not a Hugging Face tokenizer.json")
    model: dict[str, Any] = doc["model"]
    refuse = Refuser(where)
    _check_model(model, refuse)
    try:
        vocab: dict[str, int] = {str(k): int(v) for k, v in model["vocab"].items()}
        merges = [
            tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m)
            for m in model.get("merges", [])
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StoreError(where, f"model.vocab/model.merges: missing or malformed ({exc})") from None
    if any(len(m) != 2 for m in merges):
        raise StoreError(where, "model.merges: every merge must name two tokens")
    pre = import_pre_tokenizers(doc.get("pre_tokenizer"), refuse)
    steps = flat_steps(doc.get("pre_tokenizer"), "pretokenizers")
    byte_level = any(step.get("type") == "ByteLevel" for _, step in steps)
    normalizers = import_normalizers(doc.get("normalizer"), refuse)
    byte_fallback = bool(model.get("byte_fallback"))
    decoder = import_decoder(
        doc.get("decoder"), refuse, byte_level=byte_level, byte_fallback=byte_fallback
    )
    added = import_added(doc.get("added_tokens") or [], refuse, bool(normalizers))
    template = import_template(doc.get("post_processor"), refuse)
    if byte_level:
        spell = _byte_level_speller(where)
    else:
        spell = _char_speller(bool(model.get("byte_fallback")))
    token_bytes = {tid: spell(t) for t, tid in vocab.items()}
    if model.get("ignore_merges"):
        _check_tiktoken_merges(vocab, merges, refuse)  # type: ignore[arg-type]
        found = _ranks(token_bytes, where)
    elif byte_level:
        found = _pairs(vocab, merges, token_bytes, where, fallback=None)  # type: ignore[arg-type]
    else:
        if not model.get("byte_fallback"):
            refuse(
                "model.byte_fallback",
                "false without a ByteLevel pre-tokenizer",
                "byte_fallback: true (characters outside the vocabulary become <0xNN> "
                "tokens), or a ByteLevel pre-tokenizer",
            )
        fallback = [vocab.get(_BYTE_TOKEN.format(b), -1) for b in range(256)]
        if -1 in fallback:
            lost = _BYTE_TOKEN.format(fallback.index(-1))
            raise StoreError(
                where, f"model.vocab: byte_fallback needs all 256 <0xNN> tokens; {lost} is missing"
            )
        found = _pairs(vocab, merges, token_bytes, where, fallback=fallback)  # type: ignore[arg-type]
    v2 = {
        "normalizers": normalizers,
        "pre_tokenizers": pre,
        "added_tokens": added,
        "decoder": decoder or None,
        "template": template,
    }
    return Found(
        found.rule,
        found.merges,
        None,
        "none",
        {},
        source,
        found.byte_ids,
        found.tokens,
        v2=v2,
        byte_fallback=found.byte_fallback,
    )


def _check_model(model: dict[str, Any], refuse: Refuser) -> None:
    if model.get("type", "BPE") != "BPE":
        refuse(
            "model.type",
            repr(model.get("type")),
            "BPE (WordPiece, WordLevel and Unigram models are not implemented)",
        )
    if model.get("dropout") not in (None, 0, 0.0):
        refuse("model.dropout", repr(model["dropout"]), "null (dropout is random: no exact count)")
    for name in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(name):
            refuse(f"model.{name}", repr(model[name]), "null")


def _check_tiktoken_merges(
    vocab: dict[str, int], merges: list[tuple[str, str]], refuse: Refuser
) -> None:
    """`ignore_merges` is the ranks rule when the merges are a tiktoken vocabulary's: in the
    order of the ids they make, and every split of a token into two tokens listed (what the
    reference's converter writes). Anything else is refused rather than served differently. A
    token is sliced only where both parts have the length of a token (linear in its length;
    slicing it at every cut was quadratic)."""
    listed = set(merges)
    previous = -1
    for i, (a, b) in enumerate(merges):
        made = vocab.get(a + b, -1)
        if made < previous:
            refuse(
                f"model.merges[{i}]",
                "ignore_merges with merges out of the order of the ids they make",
                "ignore_merges on a tiktoken-converted file",
            )
        previous = made
    lengths = {len(token) for token in vocab}
    for token in vocab:
        n = len(token)
        for i in range(1, n):
            if i not in lengths or n - i not in lengths:
                continue
            if token[:i] in vocab and token[i:] in vocab and (token[:i], token[i:]) not in listed:
                refuse(
                    "model.merges",
                    f"ignore_merges without the merge {token[:i]!r} + {token[i:]!r}",
                    "ignore_merges on a tiktoken-converted file",
                )


def _byte_level_speller(where: str) -> Speller:
    alphabet = gpt2_byte_alphabet()

    def spell(token: str) -> bytes:
        try:
            return bytes(alphabet[c] for c in token)
        except KeyError:  # a token outside the byte alphabet: its own UTF-8 (added tokens)
            return token.encode("utf-8")

    return spell


def _char_speller(byte_fallback: bool) -> Speller:
    names = {_BYTE_TOKEN.format(b): bytes([b]) for b in range(256)} if byte_fallback else {}

    def spell(token: str) -> bytes:
        return names.get(token) or token.encode("utf-8")

    return spell


def _ranks(token_bytes: dict[int, bytes], where: str) -> Found:
    """`ignore_merges`: ids are ranks; the parts of each token as tiktoken's rule leaves them."""
    ranks = {data: tid for tid, data in sorted(token_bytes.items())}
    if len(ranks) != len(token_bytes):
        raise StoreError(where, "model.vocab: two tokens have the same bytes (not a ranks file)")
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise StoreError(where, f"model.vocab: no token for the byte(s) {missing[:8]}")
    byte_ids, merges, extra = ranks_merges(ranks, where)
    return Found("ranks", merges, None, "none", {}, "", byte_ids, extra)


def _pairs(
    vocab: dict[str, int],
    merges: list[tuple[str, str]],
    token_bytes: dict[int, bytes],
    where: str,
    *,
    fallback: list[int] | None,
) -> Found:
    """Merges in rank order over vocabulary ids; a child no earlier merge made, and every token
    no merge makes, is listed with its bytes in `tokens`."""
    by_byte: dict[int, int] = {}
    for tid, data in sorted(token_bytes.items()):
        if len(data) == 1 and (fallback is None or tid not in fallback):
            by_byte.setdefault(data[0], tid)
    if fallback is None:
        missing = [b for b in range(256) if b not in by_byte]
        if missing:
            raise StoreError(where, f"model.vocab: no token for the byte(s) {missing[:8]}")
        byte_ids = [by_byte[b] for b in range(256)]
    else:
        byte_ids = [by_byte.get(b, fallback[b]) if b < 0x80 else fallback[b] for b in range(256)]
    defined = set(byte_ids) | set(fallback or ())
    extra: dict[int, bytes] = {}
    triples: list[tuple[int, int, int]] = []
    for i, (a, b) in enumerate(merges):
        try:
            left, right, new = vocab[a], vocab[b], vocab[a + b]
        except KeyError as exc:
            raise StoreError(
                where, f"model.merges[{i}]: token {exc.args[0]!r} is not in the vocabulary"
            ) from None
        for child in (left, right):
            if child not in defined:
                extra[child] = token_bytes[child]
                defined.add(child)
        triples.append((left, right, new))
        defined.add(new)
    for tid, data in token_bytes.items():
        if tid not in defined:
            extra[tid] = data
    tokens = [(tid, data.hex()) for tid, data in sorted(extra.items())]
    return Found("pairs", triples, None, "none", {}, "", byte_ids, tokens, byte_fallback=fallback)
