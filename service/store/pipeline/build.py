"""What a format v2 file's pipeline fields become: the engine-side steps of
`service.bpe.pipeline.pipeline`, and for SentencePiece-style files the synthetic character merges
(`service.bpe.pipeline.byte_fallback`) ranked before the file's own.

Steps that provably do nothing are left out, proved from their definitions: a literal `Split`
whose pattern holds the character a last literal `Replace` normalizer replaced everywhere
(Gemma 3 splits on ' ' after replacing every ' ' by '▁'). A pipeline left with no pre-tokenizer
whose last normalizer puts in one character (the metaspace '▁') gets that character as its word
cut mark (service/bpe/pipeline/wordcut.py)."""

from __future__ import annotations

from collections.abc import Sequence

from service.bpe.pipeline import textsteps
from service.bpe.pipeline.added_tokens import AddedLiteral
from service.bpe.pipeline.byte_fallback import one_character, synthetic_merges
from service.bpe.pipeline.pipeline import DecodeStep, Pipeline
from service.bpe.pipeline.textsteps import Normalize, PreTokenize
from service.store.formats.chains import chain_scanner
from service.store.formats.tokenizer import TokenizerFile
from service.store.importers.gpt2 import gpt2_byte_alphabet
from service.store.pipeline.format import (
    ByteLevel,
    DecodeMetaspace,
    DecodeReplace,
    DecodeStrip,
    Digits,
    Lowercase,
    Metaspace,
    Normalizer,
    Prepend,
    PreTokenizer,
    Punctuation,
    Replace,
    Split,
    Strip,
    UnicodeForm,
    Whitespace,
)


def engine_merges(
    tf: TokenizerFile,
) -> tuple[list[tuple[int, int, int]], dict[int, tuple[int, ...]]]:
    """The merges the engine runs (synthetic ones first when the file has byte fallback) and the
    synthetic ids (above every id the file uses) with the fallback ids each stands for."""
    if tf.byte_fallback is None:
        return tf.merges, {}
    last_id = max(
        [
            *tf.ids_of_bytes,
            *tf.byte_fallback,
            *(t for t, _ in tf.tokens),
            *(m[2] for m in tf.merges),
            *tf.special_tokens.values(),
            *(a.id for a in tf.added_tokens or ()),
        ]
    )
    chars = {tid: data for tid, hexed in tf.tokens if one_character(data := bytes.fromhex(hexed))}
    synthetic, expand = synthetic_merges(chars, tf.ids_of_bytes, tf.byte_fallback, last_id + 1)
    return synthetic + list(tf.merges), expand


def pipeline_of(tf: TokenizerFile, expand: dict[int, tuple[int, ...]]) -> Pipeline | None:
    """The pipeline of a v2 file, or None for a file the v1 front serves as it always has."""
    if tf.format_version == 1:
        return None
    normalizers = [_normalizer(n) for n in tf.normalizers or ()]
    if tf.normalization != "none":
        normalizers.insert(0, textsteps.unicode_form(tf.normalization))
    if tf.pre_tokenizers is not None:
        pre = [_pre_tokenizer(p) for p in _live(tf.normalizers or (), tf.pre_tokenizers)]
    elif tf.pattern is not None:  # v1's meaning: the matches, what none covers dropped
        pre = [textsteps.matches(tf.pattern)]
    else:
        pre = []
    added = [AddedLiteral(t, i, special=True) for t, i in tf.special_tokens.items()]
    added += [
        AddedLiteral(a.content, a.id, a.special, a.lstrip, a.rstrip, a.single_word, a.normalized)
        for a in tf.added_tokens or ()
    ]
    decoder = [_decode_step(d) for d in tf.decoder or ()]
    template = tf.template
    return Pipeline(
        tuple(added),
        tuple(normalizers),
        tuple(pre),
        tuple(decoder),
        expand,
        tuple(template.prefix) if template else (),
        tuple(template.suffix) if template else (),
        chain_scanner(tf.pre_tokenizers) if tf.pre_tokenizers is not None else None,
        _word_mark(tf.normalizers or ()) if not pre else None,
        _replaces(tf),
    )


def _replaces(tf: TokenizerFile) -> tuple[tuple[str, str], ...] | None:
    """The normalizers as (pattern, content) when every one is a literal, non-empty `Replace`
    (str.replace is what `textsteps.replace` does for those); None otherwise."""
    steps = tf.normalizers or ()
    out = tuple((n.pattern, n.content) for n in steps if isinstance(n, Replace) and not n.regex)
    if tf.normalization != "none" or len(out) != len(steps) or not all(p for p, _ in out):
        return None
    return out


def _replaced(normalizers: Sequence[Normalizer]) -> str | None:
    """The one character no normalized text holds: what a last literal `Replace` of one
    character by text without it replaced (str.replace leaves none)."""
    last = normalizers[-1] if normalizers else None
    if isinstance(last, Replace) and not last.regex and len(last.pattern) == 1:
        return last.pattern if last.pattern not in last.content else None
    return None


def _live(normalizers: Sequence[Normalizer], pre: Sequence[PreTokenizer]) -> list[PreTokenizer]:
    """`pre` without the literal `Split` steps that cannot match: their pattern holds the
    character no normalized text holds, and only `Split` steps (which cut, never change text)
    run before them. A Split without a match keeps its piece whole (unless `invert`)."""
    gone = _replaced(normalizers)
    out: list[PreTokenizer] = []
    for i, p in enumerate(pre):
        if not (isinstance(p, Split) and _never_matches(p, gone) and _cuts_only(pre[:i])):
            out.append(p)
    return out


def _never_matches(p: Split, gone: str | None) -> bool:
    return not (p.regex or p.invert) and gone is not None and gone in p.pattern


def _cuts_only(pre: Sequence[PreTokenizer]) -> bool:
    return all(isinstance(q, Split) for q in pre)


def _word_mark(normalizers: Sequence[Normalizer]) -> str | None:
    """The word cut's mark: the one character a last literal `Replace` puts in (a metaspace)."""
    last = normalizers[-1] if normalizers else None
    if isinstance(last, Replace) and len(last.content) == 1:
        return last.content
    return None


def _byte_level_spelling(content: str) -> bytes | None:
    """What a ByteLevel decoder makes of an added token: its characters as GPT-2's byte
    alphabet when they all are in it, else its UTF-8 (as the reference decodes it)."""
    alphabet = gpt2_byte_alphabet()
    if all(c in alphabet for c in content):
        return bytes(alphabet[c] for c in content)
    return None


def _decode_step(d: DecodeReplace | DecodeStrip | DecodeMetaspace) -> DecodeStep:
    if isinstance(d, DecodeReplace):
        return DecodeStep("replace", d.pattern, d.content)
    if isinstance(d, DecodeMetaspace):
        return DecodeStep("metaspace" if d.drop_first else "replace", d.replacement, " ")
    return DecodeStep("strip", d.content, d.content, d.start)


def _normalizer(n: Normalizer) -> Normalize:
    if isinstance(n, UnicodeForm):
        return textsteps.unicode_form(n.form)
    if isinstance(n, Lowercase):
        return textsteps.lowercase()
    if isinstance(n, Replace):
        return textsteps.replace(n.pattern, n.content, is_regex=n.regex)
    if isinstance(n, Prepend):
        return textsteps.prepend(n.prepend)
    assert isinstance(n, Strip)
    return textsteps.strip(left=n.left, right=n.right)


def _pre_tokenizer(p: PreTokenizer) -> PreTokenize:
    if isinstance(p, Split):
        return textsteps.split(p.pattern, p.behavior, is_regex=p.regex, invert=p.invert)
    if isinstance(p, ByteLevel):
        return textsteps.byte_level(add_prefix_space=p.add_prefix_space, use_regex=p.use_regex)
    if isinstance(p, Metaspace):
        return textsteps.metaspace(p.replacement, p.prepend_scheme, split_pieces=p.split)
    if isinstance(p, Digits):
        return textsteps.digits(individual=p.individual_digits)
    if isinstance(p, Punctuation):
        return textsteps.punctuation(p.behavior)
    if isinstance(p, Whitespace):
        return textsteps.whitespace()
    return textsteps.whitespace_split()
