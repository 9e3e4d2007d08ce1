"""The tokenizer front: a text pipeline in front of an engine, and decoding.

Every tokenizer has a pipeline (service/bpe/pipeline): added tokens, normalizers, pre-tokenizers
and decoder steps. A format v1 file's is a degenerate one (`Pipeline.for_engine`): its special
tokens are special added tokens, its Unicode form the one normalizer, and its pattern the
engine's own, so the engine cuts and merges each stretch itself, through the text cache, and
counts without building a list of ids.

Special tokens follow tiktoken's policy. `disallowed_special` (default "all": every special token
not allowed) makes text that contains such a literal an error naming it; `allowed_special` (a set,
or "all") encodes those literals as their special ids; any other literal is ordinary text.
Special tokens are found in the raw text, before normalization, so normalization can neither hide a
special token nor make one (NFKC would turn a fullwidth look-alike into the real literal).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Literal, TypeVar

from service.bpe.engine.native import NativeEngine
from service.bpe.engine.python import Engine
from service.bpe.engine.text_cache import TextCache
from service.bpe.idbytes import IdBytes
from service.bpe.pipeline.normalizers import Normalization
from service.bpe.pipeline.pipeline import EncodeWords, Pipeline, ScanText, StretchMemo
from service.bpe.pipeline.wordcut import contexts
from service.bpe.specials import SpecialSet, SpecialTokens
from service.bpe.vocab import Vocabulary
from service.errors import EngineFailureError, ToksvcError, UndecodableBytesError

Errors = Literal["strict", "replace"]
R = TypeVar("R")
# what must never be caught at the engine boundary: the process's own exits, and typed errors
# (a work's deadline checked inside the pipeline)
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
        """Either `special_tokens` and `normalization` (a format v1 tokenizer, whose engine was
        built with its pattern), or a `pipeline` (format v2: its engine only merges the pieces
        the pipeline cuts). `cache` keeps whole ordinary texts -> ids where the engine cuts;
        `cache_owner` must name this exact vocabulary (the store uses the file's sha256).
        `nonspecial`: literals of the special tokens that are added tokens but not special
        (kept by `skip_special_tokens`)."""
        if pipeline is None:
            pipeline = Pipeline.for_engine(special_tokens or {}, normalization)
        elif special_tokens or normalization != "none":
            raise ValueError("a pipeline holds its own special tokens and normalizers")
        self.vocab = vocab
        self.engine = engine
        self.pipeline = pipeline
        self.special_tokens: dict[str, int] = pipeline.special_tokens
        self._cache = cache if pipeline.engine_cuts else None
        self._owner = cache_owner
        self._specials = SpecialTokens(self.special_tokens)
        self._cut = self._cut_of(pipeline, engine)
        """The engine's cut and merge of one normalized stretch, where the engine cuts it."""
        self._merge = _unused_merge if pipeline.engine_cuts else engine.encode_pieces  # type: ignore[attr-defined]
        """The engine's merge of pieces the pipeline's pre-tokenizers cut (a `PieceEngine`)."""
        self._words: EncodeWords | None = None
        """The native word cut and merge of a pipeline's stretches (service/bpe/pipeline/
        wordcut.py)."""
        if pipeline.words and isinstance(engine, NativeEngine):
            unsafe = contexts(vocab.tokens, pipeline.words)
            if unsafe is not None:
                self._words = partial(engine.encode_words, pipeline.words.encode(), unsafe)
        self.skipped_ids = frozenset(
            tid for text, tid in self.special_tokens.items() if text not in set(nonspecial)
        )
        """The ids `skip_special_tokens` drops: special tokens, not added non-special ones."""
        # id -> bytes, added tokens included; a list, since ids are dense (at most 2**24)
        table = list(vocab.tokens)
        for added in pipeline.added:
            table.extend([None] * (added.id + 1 - len(table)))
            table[added.id] = added.match.encode("utf-8")
        self._table = table
        self._bytes = IdBytes(table, self.skipped_ids)
        self.n_vocab = len(table)
        """tiktoken's `n_vocab`: the highest id + 1, special tokens included (the size of an
        array indexed by id). Ids may have gaps (cl100k: 100277 here, 100261 defined)."""
        self.defined_ids = self._bytes.defined_ids
        """Number of ids that are defined, special tokens included."""

    def _cut_of(self, pipeline: Pipeline, engine: Engine) -> ScanText | None:
        if pipeline.engine_cuts:  # a closure, not a bound method: no cycle through self
            return _stretches(engine, self._cache, self._owner)
        if pipeline.scanner and isinstance(engine, NativeEngine):
            return partial(engine.encode_split, pipeline.scanner)
        return None

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
        pipeline = self.pipeline
        allowed = self._specials.allowed(text, allowed_special, disallowed_special)
        merge, cut, words = self._merge, self._cut, self._words
        ids = _guarded(
            lambda t: pipeline.encode(t, allowed, merge, cut, memo=memo, words=words), text
        )
        return [*pipeline.prefix, *ids, *pipeline.suffix] if add_special_tokens else ids

    def count(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> int:
        if not self.pipeline.engine_cuts:
            encoded = self.encode(
                text, allowed_special=allowed_special, disallowed_special=disallowed_special
            )
            return len(encoded)
        allowed = self._specials.allowed(text, allowed_special, disallowed_special)
        return self.pipeline.count(text, allowed, self._count)

    def encode_ordinary(self, text: str, memo: StretchMemo | None = None) -> list[int]:
        """Encode with every special-token literal treated as ordinary text (`memo`: `encode`'s,
        one kept for ordinary text only)."""
        return self.encode(text, disallowed_special=frozenset(), memo=memo)

    def _cacheable(self, text: str) -> bool:
        return self._cache is not None and len(text) <= self._cache.max_text_chars

    def _count(self, text: str) -> int:
        if self._cache is not None and self._cacheable(text):
            return len(self._cache.ids(self._owner, text, self._encode_guarded))
        return _guarded(self.engine.count_ordinary, text)  # no ids list is kept

    def _encode_guarded(self, text: str) -> list[int]:
        return _guarded(self.engine.encode_ordinary, text)

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
        """The decoder's text steps for a `StreamDecoder`, or None where it has none."""
        return self.pipeline.decode_text if self.pipeline.decoder else None

    def decode(self, ids: Sequence[int], errors: Errors = "strict") -> str:
        """Join the bytes of all ids, then decode them as UTF-8 (never token by token)."""
        data = self.decode_bytes(ids)
        try:
            text = data.decode("utf-8", errors)
        except UnicodeDecodeError as exc:
            raise UndecodableBytesError(exc.start, data[exc.start : exc.end]) from None
        if not self.pipeline.decoder:
            return text
        return self.pipeline.decode_text(text, self._table[ids[0]] if ids else None)


def _unused_merge(pieces: list[str]) -> list[int]:
    raise AssertionError("an engine that cuts is never handed pieces")


def _guarded(call: Callable[[str], R], text: str) -> R:
    """The engine boundary: native code may fail with an exception that is not an `Exception`
    (tiktoken's core overflows its regex stack on ~1 M whitespace characters and raises
    `pyo3_runtime.PanicException`, a `BaseException`, which no `except Exception` catches).
    Any failure of the engine becomes a typed error; the process's own exits pass through."""
    try:
        return call(text)
    except _PASS_THROUGH:
        raise
    except BaseException as exc:  # the point: a native panic is a BaseException
        raise EngineFailureError(len(text), type(exc).__name__) from None


def _stretches(engine: Engine, cache: TextCache | None, owner: str) -> ScanText:
    """The engine's ids of one normalized stretch, through the text cache. The tokenizer keeps
    this function, so it holds what it needs and not the tokenizer: an old store's tokenizers
    are freed by reference counting as a reload drops them, not at the cycle collector's next
    full pass, which may come only after several reloads have each left a store behind."""

    def encode(text: str) -> list[int]:
        return _guarded(engine.encode_ordinary, text)

    if cache is None:
        return encode

    def ordinary(text: str) -> list[int]:
        if len(text) <= cache.max_text_chars:
            ids = cache.ids(owner, text, encode)
            return ids if isinstance(ids, list) else list(ids)  # a miss: the engine's own list
        return encode(text)

    return ordinary
