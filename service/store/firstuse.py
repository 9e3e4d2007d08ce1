"""Building a tokenizer on first use: what start-up reads of a file without building it, and the
holder that builds it once, for the first thread that asks.

Loading every vocabulary into every worker costs memory and start-up time for tokenizers a
deployment may never serve. With first use on, start-up checks each file's sha256 against the
manifest and parses its head (name, version, rule, pattern, normalization, special tokens,
metadata; the merges are skipped, only counted), so the catalog and `/readyz` know every file;
the full validation and the engine come with the first request that needs the tokenizer. A file
that passes its hash was validated in full when it was written (`toksvc import`/`train`), and
`toksvc verify` builds everything; a file that still fails its full check on first use is a
failure of the registry (so `/readyz` turns 503) and its requests get `tokenizer-unavailable`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec
import regex

from service.bpe import Tokenizer
from service.errors import FormatError, StoreError, TokenizerUnavailableError
from service.store.formats.tokenizer import Metadata, Name, TokenId, Version
from service.store.manifest import ManifestEntry
from service.store.reading import read_verified


@dataclass(frozen=True, slots=True)
class BuiltTokenizer:
    tokenizer: Tokenizer
    self_consistent: bool


class FirstUse:
    """A tokenizer, built now (`done`) or by the first `get` (then kept: one build per worker).
    Builds of one registry share one lock, so two first uses never build the same vocabulary
    twice (and files that share a vocabulary find it built, service.store.sharing)."""

    __slots__ = ("_build", "_built", "_failed", "_lock", "_ref")

    def __init__(
        self, ref: str, build: Callable[[], BuiltTokenizer] | None, lock: threading.Lock
    ) -> None:
        self._ref, self._build, self._lock = ref, build, lock
        self._built: BuiltTokenizer | None = None
        self._failed: StoreError | None = None

    @classmethod
    def done(cls, ref: str, built: BuiltTokenizer) -> FirstUse:
        holder = cls(ref, None, threading.Lock())
        holder._built = built
        return holder

    @property
    def built(self) -> BuiltTokenizer | None:
        """The tokenizer if it was built, without building it."""
        return self._built

    def get(self) -> BuiltTokenizer:
        built = self._built
        if built is not None:
            return built
        with self._lock:
            if self._built is None:
                if self._failed is None and self._build is not None:
                    try:
                        self._built = self._build()
                    except StoreError as exc:
                        self._failed = exc
                    self._build = None  # the closure holds the load's state: let it go
                    give_back_freed_memory()
                if self._built is None:
                    raise TokenizerUnavailableError(self._ref, str(self._failed))
            return self._built


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
        return trim
    except (OSError, AttributeError, TypeError):  # not glibc
        return None


_TRIM = _malloc_trim()


def give_back_freed_memory() -> None:
    """A build lets go of the file's bytes and its parse (several times the engine's own size);
    glibc keeps such freed heap pages mapped, so the worker's RSS would stay as high as during the
    build. malloc_trim returns them to the system (elsewhere: nothing to do)."""
    if _TRIM is not None:
        _TRIM(0)


class AddedHead(msgspec.Struct, frozen=True):
    content: str
    id: TokenId
    special: bool = False


class FileHead(msgspec.Struct, frozen=True, kw_only=True):
    """The fields of a tokenizer file start-up reads; `merges` is kept as raw JSON (not parsed)
    and the other fields of format v2 are skipped."""

    format: str
    format_version: int
    name: Name
    version: Version
    rule: str
    pattern: str | None
    normalization: str = "none"
    special_tokens: dict[str, TokenId] = msgspec.field(default_factory=dict)
    metadata: Metadata = msgspec.field(default_factory=Metadata)
    byte_ids: list[TokenId] | None = None
    tokens: list[tuple[TokenId, str]] = msgspec.field(default_factory=list)
    merges: msgspec.Raw
    byte_fallback: list[TokenId] | None = None
    added_tokens: list[AddedHead] | None = None

    @property
    def all_special_tokens(self) -> dict[str, int]:
        """The special tokens and (format v2) the added tokens marked special, as the tokenizer
        will hold them."""
        added = {a.content: a.id for a in self.added_tokens or () if a.special}
        return {**self.special_tokens, **added}

    @property
    def plain_added_tokens(self) -> dict[str, int]:
        """(Format v2) The added tokens not marked special, as the tokenizer will hold them."""
        return {a.content: a.id for a in self.added_tokens or () if not a.special}

    @property
    def defined_ids(self) -> int:
        """Defined ids, special tokens included: those of the bytes, the byte-fallback and extra
        tokens, the special and added tokens, and the merges' results. Without listed tokens
        each merge makes a new id, so merges are counted (one `[` each), not parsed; a
        SentencePiece import lists tokens that merges make again, so its merges are parsed."""
        ids = set(range(256) if self.byte_ids is None else self.byte_ids)
        ids.update(self.byte_fallback or ())
        ids.update(tid for tid, _ in self.tokens)
        ids.update(self.special_tokens.values())
        ids.update(a.id for a in self.added_tokens or ())
        if not self.tokens and not self.byte_fallback:
            return len(ids) + bytes(self.merges).count(b"[") - 1
        ids.update(made for _, _, made in _merges.decode(self.merges))
        return len(ids)


_head = msgspec.json.Decoder(FileHead)
_merges = msgspec.json.Decoder(list[tuple[int, int, int]])


def read_head(store: Path, entry: ManifestEntry) -> tuple[FileHead, bytes]:
    """The file's bytes, their hash checked against its manifest entry, and its head parsed and
    checked (name and version as listed, a known format, rule and normalization, a pattern that
    compiles); every failure a StoreError naming the file. The bytes are what the first use
    builds from: a file edited on disk after start-up does not change (or break) it."""
    where = str(store / entry.path)
    data = read_verified(store, entry.path, entry.sha256)
    try:
        head = _head.decode(data)
    except msgspec.MsgspecError as exc:
        raise FormatError(where, "file", f"is not a valid tokenizer file: {exc}") from None
    if (head.name, head.version) != (entry.name, entry.version):
        said = f"file says {head.name}@{head.version}, manifest says {entry.ref}"
        raise FormatError(where, "name/version", said)
    if head.format != "toksvc-bpe" or head.rule not in ("pairs", "ranks"):
        raise FormatError(where, "format/rule", "is not a toksvc-bpe file of a known rule")
    if head.normalization not in ("none", "NFC", "NFKC"):
        raise FormatError(where, "normalization", f"unknown: {head.normalization!r}")
    if head.pattern is not None:
        try:
            regex.compile(head.pattern)
        except regex.error as exc:
            raise FormatError(where, "pattern", f"does not compile: {exc}") from None
    return head, data
