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
import re
from array import array
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence, Set
from functools import lru_cache, partial
from typing import Literal, TypeVar

from service.bpe import normalforms
from service.bpe.cache import TextCache
from service.bpe.engine import Engine, PieceEngine
from service.bpe.native import NativeEngine
from service.bpe.pipeline import EncodeWords, Pipeline, ScanText, StretchMemo, literal_trie
from service.bpe.vocab import Vocabulary
from service.bpe.wordcut import contexts
from service.errors import (
    DisallowedSpecialError,
    EngineFailureError,
    SurrogateError,
    ToksvcError,
    UndecodableBytesError,
    UnknownIdError,
    UnknownSpecialError,
)

Normalization = Literal["none", "NFC", "NFKC"]
_GAP = 0xFFFFFFFF  # decoded_size's entry for an id without a token: no real sum reaches it
Errors = Literal["strict", "replace"]
SpecialSet = Set[str] | Literal["all"]
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
            normalforms.prepare(normalization)
        if pipeline is not None:
            self.special_tokens |= pipeline.special_tokens
            self._cache = None
        self._scan: ScanText | None = None
        """The native cut and merge of the pipeline's pre-tokenizers, where a scanner does them."""
        if pipeline is not None and pipeline.scanner and isinstance(engine, NativeEngine):
            self._scan = partial(engine.encode_split, pipeline.scanner)
        self._words: EncodeWords | None = None
        """The native word cut and merge of a pipeline's stretches (service/bpe/wordcut.py)."""
        if pipeline is not None and pipeline.words and isinstance(engine, NativeEngine):
            unsafe = contexts(vocab.tokens, pipeline.words)
            if unsafe is not None:
                self._words = partial(engine.encode_words, pipeline.words.encode(), unsafe)
        self._all_special = frozenset(self.special_tokens)  # "all", hashed once
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
        self._lengths: array[int] | None = None  # built on first use (decoded_size)
        self._leads: array[int] | None = None  # built on first use (character_starts)
        self._kept: list[bytes | None] | None = None  # built on first use (kept_bytes)
        self.n_vocab = len(table)
        """tiktoken's `n_vocab`: the highest id + 1, special tokens included (the size of an
        array indexed by id). Ids may have gaps (cl100k: 100277 here, 100261 defined)."""
        self.defined_ids = len(table) - table.count(None)
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
            allowed = self._allowed(text, allowed_special, disallowed_special)
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
        segments = list(self._segments(text, allowed_special, disallowed_special))
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
        """`encode` with a memo: the text cut by the same regex as `_segments` (its split, in
        one call: odd parts are the special tokens), each stretch encoded once."""
        allowed_set = self._allowed(text, allowed, disallowed)
        parts = _splitter(frozenset(allowed_set)).split(text) if allowed_set else [text]
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
            return len(self.encode(text, allowed_special=allowed_special,
                                   disallowed_special=disallowed_special))  # fmt: skip
        total = 0
        for segment, special_id in self._segments(text, allowed_special, disallowed_special):
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
        return text if form == "none" else normalforms.normalize(form, text)

    def _allowed(self, text: str, allowed: SpecialSet, disallowed: SpecialSet) -> Set[str]:
        """The allowed special tokens, after refusing text with a disallowed one."""
        _refuse_surrogates(text)
        allowed_set = self._special_set(allowed)
        if disallowed == "all":
            disallowed_set = set() if allowed == "all" else self._all_special - allowed_set
        else:
            disallowed_set = self._special_set(disallowed)
        if disallowed_set and (found := _finder(frozenset(disallowed_set)).search(text)):
            raise DisallowedSpecialError(found.group(), found.start())
        return allowed_set

    def _segments(
        self, text: str, allowed: SpecialSet, disallowed: SpecialSet
    ) -> Iterator[tuple[str, int | None]]:
        """Split text into (ordinary text, None) and (literal, special id) segments."""
        allowed_set = self._allowed(text, allowed, disallowed)
        if not allowed_set:
            yield text, None
            return
        start = 0
        for found in _finder(frozenset(allowed_set)).finditer(text):
            if found.start() > start:
                yield text[start : found.start()], None
            yield found.group(), self.special_tokens[found.group()]
            start = found.end()
        if start < len(text) or start == 0:
            yield text[start:], None

    def _special_set(self, tokens: SpecialSet) -> Set[str]:
        if tokens == "all":
            return self._all_special
        unknown = {t for t in tokens if t not in self.special_tokens}  # never a copy of the keys
        if unknown:
            raise UnknownSpecialError(unknown)
        return tokens

    # --- decoding ---------------------------------------------------------------------------

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes of all ids joined. Unknown ids are an error that names them."""
        table = self._table
        try:
            if ids and min(ids) < 0:  # a negative index would read from the end of the table
                raise IndexError
            return b"".join([table[i] for i in ids])  # type: ignore[misc]
        except (IndexError, TypeError):  # beyond the table, or a gap (None) in it
            size = len(table)
            unknown = [i for i in ids if not 0 <= i < size or table[i] is None]
            raise UnknownIdError(unknown, self.defined_ids) from None

    def kept_bytes(self, ids: Sequence[int]) -> bytes:
        """`decode_bytes` with the bytes of `skipped_ids` left out (what `skip_special_tokens`
        keeps): a second table where they are empty, so the ids need no filtering."""
        kept = self._kept
        if kept is None:  # two threads may both build it: the same list, harmless
            kept = list(self._table)
            for tid in self.skipped_ids:
                kept[tid] = b""
            self._kept = kept
        try:
            if ids and min(ids) < 0:
                raise IndexError
            return b"".join([kept[i] for i in ids])  # type: ignore[misc]
        except (IndexError, TypeError):
            return self.decode_bytes(ids)  # raises UnknownIdError naming them

    def decoded_size(self, ids: Sequence[int]) -> int:
        """The length of `decode_bytes(ids)`, without building it (to check a budget first)."""
        lengths = self._lengths
        if lengths is None:  # two threads may both build it: the same table, harmless
            lengths = self._lengths = array("I", [_GAP if b is None or len(b) >= _GAP else len(b)
                                                  for b in self._table])  # fmt: skip
        try:
            if ids and min(ids) < 0:
                raise IndexError
            size = sum(map(lengths.__getitem__, ids))
        except IndexError:
            size = _GAP
        # an unknown id (or a token of 4 GiB) counts _GAP: only then is the exact answer needed
        return size if size < _GAP else len(self.decode_bytes(ids))  # raises UnknownIdError

    def character_starts(self, ids: Sequence[int]) -> list[int]:
        """How many characters start in each token's bytes (its UTF-8 lead bytes): summed over a
        prefix of the ids, where the next token lies in the decoded text, in code points (a
        character split over two tokens counts in the first). Known ids only."""
        leads = self._leads
        if leads is None:  # two threads may both build it: the same table, harmless
            starts = [0 if b is None else sum((c & 0xC0) != 0x80 for c in b) for b in self._table]
            leads = self._leads = array("I", starts)
        return list(map(leads.__getitem__, ids))

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


def _refuse_surrogates(text: str) -> None:
    """Lone surrogates (possible in JSON) are no characters. UTF-8 encoding finds them at C speed
    (0.4 ms per MB, a tenth of a regex scan); only then is the position looked up."""
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SurrogateError(exc.start) from None


@lru_cache(maxsize=256)
def _finder(literals: frozenset[str]) -> re.Pattern[str]:
    """A regex that finds any of the literals, the longest first where several start together."""
    return re.compile(literal_trie(sorted(literals)))


@lru_cache(maxsize=64)
def _splitter(literals: frozenset[str]) -> re.Pattern[str]:
    """`_finder`'s regex as one group, for `split`."""
    return re.compile(f"({literal_trie(sorted(literals))})")
