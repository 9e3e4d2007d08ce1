"""The tokenizer front: normalization and special tokens in front of an engine, and decoding.

Special tokens follow tiktoken's policy. `disallowed_special` (default "all": every special token
not allowed) makes text that contains such a literal an error naming it; `allowed_special` (a set,
or "all") encodes those literals as their special ids; any other literal is ordinary text.

Special tokens are found in the raw text, before normalization, so normalization can neither hide a
special token nor make one (NFKC would turn a fullwidth look-alike into the real literal).
Normalization then applies to each stretch of ordinary text between allowed special tokens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Literal, TypeVar

from service.bpe.engine.native import NativeEngine
from service.bpe.engine.python import Engine, PieceEngine
from service.bpe.engine.text_cache import TextCache
from service.bpe.idbytes import IdBytes
from service.bpe.pipeline import normal_forms
from service.bpe.pipeline.pipeline import EncodeWords, Pipeline, ScanText, StretchMemo
from service.bpe.pipeline.wordcut import contexts
from service.bpe.specials import SpecialSet, SpecialTokens, splitter
from service.bpe.vocab import Vocabulary
from service.errors import (
    EngineFailureError,
    ToksvcError,
    UndecodableBytesError,
)

Normalization = Literal["none", "NFC", "NFKC"]
Errors = Literal["strict", "replace"]
R = TypeVar("R")
# what must never be caught at the engine boundary: the process's or the task's own end
# the process's own exits, and typed errors (a work's deadline checked inside the pipeline)
_PASS_THROUGH = (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError, ToksvcError)


class Tokenizer:
    def __init__(
        self,
        vocab: Vocabulary,
        engine: Engine,
        special_tokens: Mapping[str, int] | None = None,
        normalization: Normalization = "none",
        *,
        cache: TextCache | None = None,
        cache_owner: str = "",
        nonspecial: Collection[str] = (),
        pipeline: Pipeline | None = None,
    ) -> None:
        """`cache` keeps whole ordinary texts -> ids; `cache_owner` must name this exact
        vocabulary (the store uses the file's sha256). `nonspecial`: literals of
        `special_tokens` that are added tokens but not special (kept by `skip_special_tokens`).
        `pipeline` (format v2): the added tokens, normalizers, pre-tokenizers and decoder of a
        Hugging Face file; its engine then only merges the pieces it cuts, and `normalization`
        is part of it."""
        self.vocab = vocab
        self.engine = engine
        self._cache = cache
        self._owner = cache_owner
        self.pipeline = pipeline
        self.special_tokens: dict[str, int] = dict(special_tokens or {})
        self.normalization = normalization
        if normalization != "none":  # its tables now, as it loads, not on a request's first marks
            normal_forms.prepare(normalization)
        if pipeline is not None:
            self.special_tokens |= pipeline.special_tokens
            self._cache = None
        self._scan: ScanText | None = None
        """The native cut and merge of the pipeline's pre-tokenizers, where a scanner does them."""
        if pipeline is not None and pipeline.scanner and isinstance(engine, NativeEngine):
            self._scan = partial(engine.encode_split, pipeline.scanner)
        self._words: EncodeWords | None = None
        """The native word cut and merge of a pipeline's stretches
        (service/bpe/pipeline/wordcut.py)."""
        if pipeline is not None and pipeline.words and isinstance(engine, NativeEngine):
            unsafe = contexts(vocab.tokens, pipeline.words)
            if unsafe is not None:
                self._words = partial(engine.encode_words, pipeline.words.encode(), unsafe)
        self._specials = SpecialTokens(self.special_tokens)
        self.lead: Callable[[bytes], bytes] | None = None
        """What the start of a sequence makes of its first bytes: None for byte-level families;
        a SentencePiece family drops one leading space (the stream assembler applies it)."""
        self.skipped_ids = frozenset(
            tid for text, tid in self.special_tokens.items() if text not in set(nonspecial)
        )
        """The ids `skip_special_tokens` drops: special tokens, not added non-special ones."""
        # id -> bytes, special tokens included; a list, since ids are dense (at most 2**24)
        table = list(vocab.tokens)
        table.extend([None] * (max(self.special_tokens.values(), default=-1) + 1 - len(table)))
        for text, tid in self.special_tokens.items():
            table[tid] = text.encode("utf-8")
        for added in pipeline.added if pipeline is not None else ():
            table.extend([None] * (added.id + 1 - len(table)))
            table[added.id] = pipeline.decoded(added)  # type: ignore[union-attr]
        self._table = table
        self._bytes = IdBytes(table, self.skipped_ids)
        self.n_vocab = len(table)
        """tiktoken's `n_vocab`: the highest id + 1, special tokens included (the size of an
        array indexed by id). Ids may have gaps (cl100k: 100277 here, 100261 defined)."""
        self.defined_ids = self._bytes.defined_ids
        """Number of ids that are defined, special tokens included."""

    # --- encoding ---------------------------------------------------------------------------

    def encode(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
        add_special_tokens: bool = False,
        memo: StretchMemo | None = None,
    ) -> list[int]:
        """`add_special_tokens`: put the model's template ids (BOS/EOS, format v2) around the
        text, as the reference's post-processor does; never implied. `memo`: the ids of the
        stretches of ordinary text already encoded by calls with the same special-token
        arguments (one memo per such set, kept by the caller for texts that share most of
        their stretches: a conversation's prefixes); the ids are the same with or without it."""
        if self.pipeline is not None:
            pipeline = self.pipeline
            allowed = self._specials.allowed(text, allowed_special, disallowed_special)
            engine: PieceEngine = self.engine  # type: ignore[assignment]
            scan, words = self._scan, self._words
            ids = _guarded(
                lambda t: pipeline.encode(
                    t, allowed, engine.encode_pieces, scan, memo=memo, words=words
                ),
                text,
            )
            return [*pipeline.prefix, *ids, *pipeline.suffix] if add_special_tokens else ids
        if memo is not None:
            return self._encode_known(text, allowed_special, disallowed_special, memo)
        segments = list(self._specials.segments(text, allowed_special, disallowed_special))
        if len(segments) == 1 and segments[0][1] is None:  # ordinary text: the engine's own list
            ordinary = self._ordinary(self._normalize(segments[0][0]))
            return ordinary if isinstance(ordinary, list) else list(ordinary)
        out: list[int] = []
        for segment, special_id in segments:
            if special_id is not None:
                out.append(special_id)
            else:
                out += self._ordinary(self._normalize(segment))
        return out

    def _encode_known(
        self, text: str, allowed: SpecialSet, disallowed: SpecialSet, memo: StretchMemo
    ) -> list[int]:
        """`encode` with a memo: the text cut by the same regex as `SpecialTokens.segments` (its
        split, in one call: odd parts are the special tokens), each stretch encoded once."""
        allowed_set = self._specials.allowed(text, allowed, disallowed)
        parts = splitter(frozenset(allowed_set)).split(text) if allowed_set else [text]
        special = self.special_tokens
        out: list[int] = []
        for i, part in enumerate(parts):
            if i % 2:
                out.append(special[part])
            elif part:
                known = memo.get((part, False))
                if known is None:
                    known = memo[part, False] = list(self._ordinary(self._normalize(part)))
                out += known
        return out

    def count(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> int:
        if self.pipeline is not None:
            return len(
                self.encode(
                    text, allowed_special=allowed_special, disallowed_special=disallowed_special
                )
            )
        total = 0
        for segment, special_id in self._specials.segments(
            text, allowed_special, disallowed_special
        ):
            if special_id is not None:
                total += 1
            elif self._cacheable(segment):
                total += len(self._ordinary(self._normalize(segment)))
            else:  # the engine only counts: no ids list is kept
                total += _guarded(self.engine.count_ordinary, self._normalize(segment))
        return total

    def encode_ordinary(self, text: str, memo: StretchMemo | None = None) -> list[int]:
        """Encode with every special-token literal treated as ordinary text (`memo`: `encode`'s,
        one kept for ordinary text only)."""
        return self.encode(text, disallowed_special=frozenset(), memo=memo)

    def _cacheable(self, text: str) -> bool:
        return self._cache is not None and len(text) <= self._cache.max_text_chars

    def _ordinary(self, text: str) -> Sequence[int]:
        if self._cache is not None and self._cacheable(text):
            return self._cache.ids(self._owner, text, self._encode_guarded)
        return _guarded(self.engine.encode_ordinary, text)

    def _encode_guarded(self, text: str) -> list[int]:
        return _guarded(self.engine.encode_ordinary, text)

    def _normalize(self, text: str) -> str:
        form = self.normalization
        return text if form == "none" else normal_forms.normalize(form, text)

    # --- decoding ---------------------------------------------------------------------------

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes of all ids joined. Unknown ids are an error that names them."""
        return self._bytes.decode_bytes(ids)

    def kept_bytes(self, ids: Sequence[int]) -> bytes:
        """`decode_bytes` with the bytes of `skipped_ids` left out (`skip_special_tokens`)."""
        return self._bytes.kept_bytes(ids)

    def decoded_size(self, ids: Sequence[int]) -> int:
        """The length of `decode_bytes(ids)`, without building it (to check a budget first)."""
        return self._bytes.decoded_size(ids)

    def character_starts(self, ids: Sequence[int]) -> list[int]:
        """How many characters start in each token's bytes (`IdBytes.character_starts`)."""
        return self._bytes.character_starts(ids)

    @property
    def text_step(self) -> Callable[[str, bytes | None], str] | None:
        """The decoder's text steps for a `StreamDecoder` (format v2), or None."""
        return self.pipeline.decode_text if self.pipeline and self.pipeline.decoder else None

    def decode(self, ids: Sequence[int], errors: Errors = "strict") -> str:
        """Join the bytes of all ids, then decode them as UTF-8 (never token by token)."""
        data = self.decode_bytes(ids)
        try:
            text = data.decode("utf-8", errors)
        except UnicodeDecodeError as exc:
            raise UndecodableBytesError(exc.start, data[exc.start : exc.end]) from None
        if self.pipeline is None:
            return text
        return self.pipeline.decode_text(text, self._table[ids[0]] if ids else None)


def _guarded(call: Callable[[str], R], text: str) -> R:
    """The engine boundary: native code may fail with an exception that is not an `Exception`
    (tiktoken's core overflows its regex stack on ~1 M whitespace characters and raises
    `pyo3_runtime.PanicException`, a `BaseException`, which went past every handler to a 500).
    Any failure of the engine becomes a typed error; the process's own exits pass through."""
    try:
        return call(text)
    except _PASS_THROUGH:
        raise
    except BaseException as exc:  # the point: a native panic is a BaseException
        raise EngineFailureError(len(text), type(exc).__name__) from None
