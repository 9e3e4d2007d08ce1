"""Format v2's rules on the text pipeline and the added tokens that a JSON Schema cannot express
(used by `service.store.validation`; every error names the offending entry)."""

from __future__ import annotations

from service.store.formats.tokenizer import V2_FIELDS, TokenizerFile
from service.store.pipeline.component import BrokenRule
from service.store.pipeline.kinds import KINDS


def check_version(tf: TokenizerFile) -> None:
    """The v2 fields only in a v2 file, the v1 fields they replace left out, and each
    component's own rules (`check`)."""
    if tf.format_version == 1:
        for name in V2_FIELDS:
            if getattr(tf, name) is not None:
                raise BrokenRule(name, "is a format v2 field: set format_version to 2")
        return
    if tf.pre_tokenizers is not None and tf.pattern is not None:
        raise BrokenRule("pattern", "must be null when pre_tokenizers are given")
    if tf.normalizers is not None and tf.normalization != "none":
        raise BrokenRule("normalization", 'must be "none" when normalizers are given')
    for kind in KINDS.values():
        value = getattr(tf, kind.field)
        if isinstance(value, list):
            for i, component in enumerate(value):
                component.check(f"{kind.field}[{i}]")
        elif value is not None:
            value.check(kind.field)


def check_byte_fallback(tf: TokenizerFile, tokens: dict[int, bytes]) -> set[int]:
    """Define the fallback tokens; return the ids no merge may use: the fallback tokens of the
    bytes 0x80-0xFF, which the synthetic character merges consume first (that is what makes
    them exact)."""
    if tf.byte_fallback is None:
        return set()
    if tf.rule != "pairs":
        raise BrokenRule("byte_fallback", "is only allowed with the pairs rule")
    if len(tf.byte_fallback) != 256:
        raise BrokenRule("byte_fallback", f"must list 256 ids, has {len(tf.byte_fallback)}")
    byte_ids = tf.ids_of_bytes
    for b, tid in enumerate(tf.byte_fallback):
        if tid == byte_ids[b]:
            continue
        if tid in tokens:
            raise BrokenRule(f"byte_fallback[{b}]", f"id {tid} is already defined")
        tokens[tid] = bytes([b])
    return set(tf.byte_fallback[0x80:])


def check_added(tf: TokenizerFile, tokens: list[bytes | None]) -> None:
    owner: dict[int, str] = {}
    for text, tid in tf.special_tokens.items():
        owner[tid] = text
    for i, added in enumerate(tf.added_tokens or ()):
        entry = f"added_tokens[{i}]"
        if added.id in owner:
            raise BrokenRule(entry, f"id {added.id} is also the id of {owner[added.id]!r}")
        vocab_bytes = tokens[added.id] if added.id < len(tokens) else None
        if (
            vocab_bytes is not None
            and not added.normalized
            and vocab_bytes != added.content.encode()
        ):
            raise BrokenRule(entry, f"id {added.id} is a token with other bytes")
        owner[added.id] = added.content
    if tf.template is not None:
        for i, tid in enumerate([*tf.template.prefix, *tf.template.suffix]):
            if tid not in owner and not (tid < len(tokens) and tokens[tid] is not None):
                raise BrokenRule(f"template[{i}]", f"id {tid} is no token")
