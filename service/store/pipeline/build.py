"""What a file's pipeline becomes: the steps of `service.bpe.pipeline.pipeline` its components
build, and for SentencePiece-style files the synthetic character merges
(`service.bpe.pipeline.byte_fallback`) ranked before the file's own.

Steps that provably do nothing are left out, proved from their definitions: a literal `Split`
whose pattern holds the character a last literal `Replace` normalizer replaced everywhere
(Gemma 3 splits on ' ' after replacing every ' ' by '▁'). A pipeline left with no pre-tokenizer
whose last normalizer puts in one character (the metaspace '▁') gets that character as its word
cut mark (service/bpe/pipeline/wordcut.py)."""

from __future__ import annotations

from collections.abc import Sequence

from service.bpe.pipeline import normalizers, pre_tokenizers
from service.bpe.pipeline.added_tokens import special_added
from service.bpe.pipeline.byte_fallback import one_character, synthetic_merges
from service.bpe.pipeline.pipeline import Pipeline
from service.store.formats.chains import chain_scanner
from service.store.formats.tokenizer import TokenizerFile
from service.store.pipeline.normalizers import Normalizer, Replace
from service.store.pipeline.pre_tokenizers import PreTokenizer, Split


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


def pipeline_of(tf: TokenizerFile, expand: dict[int, tuple[int, ...]]) -> Pipeline:
    """The pipeline of a file: a v1 file's is `Pipeline.for_engine` (its engine is built with
    its pattern and cuts), a v2 file's is built from its components."""
    if tf.format_version == 1:
        return Pipeline.for_engine(tf.special_tokens, tf.normalization)
    steps = [n.build() for n in tf.normalizers or ()]
    if tf.normalization != "none":
        steps.insert(0, normalizers.unicode_form(tf.normalization))
    if tf.pre_tokenizers is not None:
        pre = [p.build() for p in _live(tf.normalizers or (), tf.pre_tokenizers)]
    elif tf.pattern is not None:  # v1's meaning: the matches, what none covers dropped
        pre = [pre_tokenizers.matches(tf.pattern)]
    else:
        pre = []
    added = (*special_added(tf.special_tokens), *(a.build() for a in tf.added_tokens or ()))
    prefix, suffix = tf.template.build() if tf.template else ((), ())
    return Pipeline(
        added,
        tuple(steps),
        tuple(pre),
        tuple(d.build() for d in tf.decoder or ()),
        expand,
        prefix,
        suffix,
        chain_scanner(tf.pre_tokenizers) if tf.pre_tokenizers is not None else None,
        words=_word_mark(tf.normalizers or ()) if not pre else None,
        replaces=_replaces(tf),
    )


def _replaces(tf: TokenizerFile) -> tuple[tuple[str, str], ...] | None:
    """The normalizers as (pattern, content) when every one is a literal, non-empty `Replace`
    (str.replace is what `normalizers.replace` does for those); None otherwise."""
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
