"""The text pipeline of a Hugging Face `tokenizer.json`, in front of a merge engine (format v2).

Encoding follows the reference step for step: added tokens that are matched on the raw text are
split out first (leftmost, longest first, with their `lstrip`/`rstrip`/`single_word` rules); each
stretch between them is normalized, then the added tokens matched on normalized text are split
out; what is left is cut into pieces by the pre-tokenizer steps, and each piece is merged by the
engine. When a C scanner cuts exactly what the steps cut (`scanner`,
service/store/formats/chains.py), the
native engine cuts and merges each stretch in one call instead. Ids the engine made for
synthetic merges (characters rebuilt from bytes that turned out not to be tokens, see
docs/format.md) are expanded back into their byte-fallback ids.

Special added tokens follow the tokenizer's special-token policy (`Tokenizer` checks disallowed
ones first): only allowed ones are split out, any other is ordinary text. Non-special added tokens
are always split out, as the reference does. Decoding applies the decoder's text steps to the
joined UTF-8 text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace

from service.bpe.deadline import CHECK_EVERY, checkpoint
from service.bpe.pipeline.added_tokens import (
    AddedLiteral,
    AddedSet,
    Matcher,
    matchers,
    special_added,
    split_added,
)
from service.bpe.pipeline.decoders import Decode, run_decoders
from service.bpe.pipeline.normalizers import (
    Normalization,
    Normalize,
    run_normalizers,
    unicode_form,
)
from service.bpe.pipeline.pre_tokenizers import PreTokenize, run_pre_tokenizers

MergePieces = Callable[[list[str]], list[int]]
ScanText = Callable[[str], list[int]]  # cut by the pipeline's scanner and merged, in C
StretchMemo = dict[tuple[str, bool], list[int]]  # (stretch, begins the text) -> its ids
# stretches (str, cut by the word cut: service/bpe/pipeline/wordcut.py) and added ids (int), in C
EncodeWords = Callable[[list[str | int]], list[int]]


@dataclass(frozen=True, slots=True)
class Pipeline:
    added: Sequence[AddedLiteral] = ()
    normalizers: Sequence[Normalize] = ()
    pre_tokenizers: Sequence[PreTokenize] = ()
    decoder: Sequence[Decode] = ()
    expand: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    prefix: tuple[int, ...] = ()
    suffix: tuple[int, ...] = ()
    scanner: str | None = None  # the C scanner that cuts exactly what `pre_tokenizers` cut
    engine_cuts: bool = False  # the engine cuts by its own pattern (format v1: `for_engine`)
    words: str | None = None  # the mark a stretch may be cut before (no pre-tokenizers left)
    # the normalizers as (pattern, content) when all are literal replacements (Gemma: ' ' -> '▁')
    replaces: tuple[tuple[str, str], ...] | None = None
    _expand_from: int = 0  # the lowest synthetic id (set on creation)
    _plain: bool = False  # every added token is special: none is split out unless allowed
    _key: AddedSet = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        """Added tokens matched in normalized text are looked for (and decode) normalized, as
        in the reference."""
        added = []
        for a in self.added:
            match = a.content
            if a.normalized:
                match = run_normalizers(self.normalizers, a.content, True)[0]
            added.append(replace(a, match=match))
        object.__setattr__(self, "added", tuple(added))
        # the matchers' regexes are built here, at load: Gemma's 6,414 literals take 0.1 s
        object.__setattr__(self, "_key", AddedSet(self.added))
        object.__setattr__(self, "_expand_from", min(self.expand, default=0))
        object.__setattr__(self, "_plain", all(a.special for a in self.added))

    @classmethod
    def for_engine(
        cls, special_tokens: Mapping[str, int], normalization: Normalization
    ) -> Pipeline:
        """The pipeline of a format v1 file: its special tokens as special added tokens, its
        Unicode form as the one normalizer, and its pattern the engine's own: the engine cuts
        and merges each stretch itself (`engine_cuts`)."""
        added = special_added(special_tokens)
        forms = (unicode_form(normalization),) if normalization != "none" else ()
        return cls(added, forms, engine_cuts=True)

    @property
    def special_tokens(self) -> dict[str, int]:
        return {a.content: a.id for a in self.added if a.special}

    def encode(
        self,
        text: str,
        allowed: Set[str],
        merge: MergePieces,
        scan: ScanText | None = None,
        *,
        memo: StretchMemo | None = None,
        words: EncodeWords | None = None,
    ) -> list[int]:
        """`scan`: the engine's cut-and-merge by `scanner` (None: the Python steps and `merge`).
        `memo`: the ids of each stretch between raw-matched added tokens already encoded
        (with the same `allowed`), by its text and whether it begins the text; a stretch's ids
        depend on nothing else, so texts that share most stretches (a conversation's prefixes)
        cost about their new stretches. `words`: the engine's word cut and merge of the whole
        text's stretches in one call (for a pipeline with `words`, no added tokens matched on
        normalized text and no memo)."""
        if not allowed and self._plain and memo is None and words is None:  # one stretch
            segment, origin = (
                run_normalizers(self.normalizers, text, True) if self.normalizers else (text, True)
            )
            return self._pieces(segment, origin, merge, scan) if segment else []
        raw, normalized = matchers(self._key, allowed)
        if words is not None and normalized is None and memo is None:
            return self._expanded(words(self._stretches(text, raw)))
        out: list[int] = []
        for n, (start, end, token) in enumerate(split_added(text, raw)):
            if n % CHECK_EVERY == CHECK_EVERY - 1:
                checkpoint()
            if token is not None:
                out.append(token.id)
            elif memo is None:
                out += self._stretch(text[start:end], start == 0, normalized, merge, scan)
            else:
                key = (text[start:end], start == 0)
                ids = memo.get(key)
                if ids is None:
                    ids = memo[key] = self._stretch(key[0], key[1], normalized, merge, scan)
                out += ids
        return out

    def count(self, text: str, allowed: Set[str], count: Callable[[str], int]) -> int:
        """The number of ids `encode` gives, each stretch counted by `count` (the engine's
        count of a normalized stretch: no ids list is kept). For pipelines whose added tokens
        all match the raw text and need no expansion (`engine_cuts`)."""
        if not allowed and self._plain:  # one stretch
            return count(run_normalizers(self.normalizers, text, True)[0]) if text else 0
        raw, _ = matchers(self._key, allowed)
        total = 0
        for n, (start, end, token) in enumerate(split_added(text, raw)):
            if n % CHECK_EVERY == CHECK_EVERY - 1:
                checkpoint()
            if token is not None:
                total += 1
            else:
                total += count(run_normalizers(self.normalizers, text[start:end], start == 0)[0])
        return total

    def _stretch(
        self,
        text: str,
        at_start: bool,
        normalized: Matcher | None,
        merge: MergePieces,
        scan: ScanText | None,
    ) -> list[int]:
        """One stretch of text between raw-matched added tokens: normalized, its normalized
        added tokens split out, the rest pre-tokenized and merged."""
        out: list[int] = []
        segment, origin = run_normalizers(self.normalizers, text, at_start)
        for a, b, later in split_added(segment, normalized):
            if later is not None:
                out.append(later.id)
                continue
            out += self._pieces(segment[a:b], origin and a == 0, merge, scan)
        return out

    def _pieces(
        self, segment: str, at_start: bool, merge: MergePieces, scan: ScanText | None
    ) -> list[int]:
        """The ids of normalized text without added tokens: cut and merged by the engine
        (`scan`), or cut by the pre-tokenizers and each piece merged."""
        if scan is not None:
            ids = scan(segment)
            return self._expanded(ids) if self.expand else ids
        pieces = run_pre_tokenizers(self.pre_tokenizers, segment, at_start)
        return self._expanded(merge(pieces)) if pieces else []

    def _stretches(self, text: str, raw: Matcher | None) -> list[str | int]:
        """The normalized stretches between the added tokens of `raw` and those tokens' ids, in
        order (a stretch's pre-tokenizers are none: the caller checked)."""
        steps = self.normalizers
        items: list[str | int] = []
        if self.replaces is not None and raw is not None and raw.splits:
            # literal replacements: str.replace over the gaps, no call per step and gap
            parts: list[str] = raw.pattern.split(text)
            gaps = parts[0::2]
            for pattern, content in self.replaces:
                gaps = [g.replace(pattern, content) for g in gaps]
            items = [*parts]
            items[0::2] = gaps
            items[1::2] = [raw.kind.last[m].id for m in parts[1::2]]
            return items
        if raw is not None and raw.splits:  # no token with rules: the split in C
            tokens = raw.kind.last
            for n, part in enumerate(raw.pattern.split(text)):
                if n % CHECK_EVERY == CHECK_EVERY - 1:
                    checkpoint()
                if n & 1:
                    items.append(tokens[part].id)
                elif part:
                    items.append(run_normalizers(steps, part, n == 0)[0])
            return items
        for n, (start, end, token) in enumerate(split_added(text, raw)):
            if n % CHECK_EVERY == CHECK_EVERY - 1:
                checkpoint()
            if token is not None:
                items.append(token.id)
            else:
                items.append(run_normalizers(steps, text[start:end], start == 0)[0])
        return items

    def _expanded(self, ids: list[int]) -> list[int]:
        expand = self.expand
        if not expand or not ids or max(ids) < self._expand_from:
            return ids
        out: list[int] = []
        for i in ids:
            if i in expand:
                out += expand[i]
            else:
                out.append(i)
        return out

    def decode_text(self, text: str, first: bytes | None) -> str:
        """The decoder's text steps on decoded text; `first`: the bytes of the output's first
        token (None when this text does not begin the output)."""
        return run_decoders(self.decoder, text, first)
