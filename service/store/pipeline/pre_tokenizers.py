"""Format v2's pre-tokenizers: each splits every piece the step before made, and merges never
cross pieces. Each imports its Hugging Face types, checks its fields and builds its step of
`service.bpe.pipeline.pre_tokenizers` (see `service.store.pipeline.component`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self, get_args

from service.bpe.pipeline import pre_tokenizers
from service.bpe.pipeline.pre_tokenizers import Behavior, PreTokenize
from service.store.pipeline.component import (
    BrokenRule,
    HfContext,
    Refuser,
    Step,
    compiles,
    flat_steps,
    hf_pattern,
    import_steps,
)

Scheme = Literal["first", "always", "never"]
_BEHAVIORS: dict[str, Behavior] = {
    "Removed": "removed",
    "Isolated": "isolated",
    "MergedWithPrevious": "merged_with_previous",
    "MergedWithNext": "merged_with_next",
    "Contiguous": "contiguous",
}


def hf_behavior(node: dict[str, Any], at: str, refuse: Refuser) -> Behavior:
    name = node.get("behavior", "Isolated")
    if name not in _BEHAVIORS:
        refuse(f"{at}.behavior", repr(name), ", ".join(_BEHAVIORS))
    return _BEHAVIORS[name]


def hf_scheme(node: dict[str, Any], at: str, refuse: Refuser) -> Scheme:
    """A Metaspace step's `prepend_scheme`, or what the older `add_prefix_space` meant."""
    if "prepend_scheme" in node:
        scheme = node["prepend_scheme"]
        if scheme not in ("first", "always", "never"):
            refuse(f"{at}.prepend_scheme", repr(scheme), "first, always, never")
        return scheme  # type: ignore[no-any-return]
    return "always" if node.get("add_prefix_space", True) else "never"


class PreTokenizerStep(Step, frozen=True, kw_only=True):
    def build(self) -> PreTokenize:
        raise NotImplementedError


class Split(PreTokenizerStep, frozen=True, kw_only=True, tag="split"):
    """Hugging Face's `Split`: matches of `pattern` (literal, or regex when `regex`), or with
    `invert` what lies between them, combined with the rest as `behavior` says."""

    hf: ClassVar = ("Split",)
    pattern: str
    regex: bool = True
    behavior: Behavior = "isolated"
    invert: bool = False

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        pattern, is_regex = hf_pattern(node, at, ctx.refuse)
        behavior = hf_behavior(node, at, ctx.refuse)
        return cls(
            pattern=pattern, regex=is_regex, invert=bool(node.get("invert")), behavior=behavior
        )

    def check(self, at: str) -> None:
        if not self.pattern:
            raise BrokenRule(f"{at}.pattern", "must not be empty")
        if self.regex:
            compiles(f"{at}.pattern", self.pattern)

    def build(self) -> PreTokenize:
        return pre_tokenizers.split(
            self.pattern, self.behavior, is_regex=self.regex, invert=self.invert
        )


class ByteLevel(PreTokenizerStep, frozen=True, kw_only=True, tag="byte_level"):
    """GPT-2's byte-level step: a space put in front (`add_prefix_space`, when the text does not
    begin with one) and GPT-2's split regex (`use_regex`)."""

    hf: ClassVar = ("ByteLevel",)
    add_prefix_space: bool = False
    use_regex: bool = True

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        if not ctx.last:  # later steps would see its alphabet
            ctx.refuse(
                at,
                "a ByteLevel pre-tokenizer before other steps",
                "ByteLevel as the last step (once)",
            )
        return cls(
            add_prefix_space=bool(node.get("add_prefix_space")),
            use_regex=bool(node.get("use_regex", True)),
        )

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> PreTokenize:
        return pre_tokenizers.byte_level(
            add_prefix_space=self.add_prefix_space, use_regex=self.use_regex
        )


class Metaspace(PreTokenizerStep, frozen=True, kw_only=True, tag="metaspace"):
    """Spaces become `replacement`; it is put in front as `prepend_scheme` says (`first`: of the
    text's first stretch only); `split`: pieces begin at each `replacement`."""

    hf: ClassVar = ("Metaspace",)
    replacement: str = "\u2581"
    prepend_scheme: Scheme = "always"
    split: bool = True

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        return cls(
            replacement=str(node.get("replacement", "\u2581")),
            prepend_scheme=hf_scheme(node, at, ctx.refuse),
            split=bool(node.get("split", True)),
        )

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> PreTokenize:
        return pre_tokenizers.metaspace(
            self.replacement, self.prepend_scheme, split_pieces=self.split
        )


class Digits(PreTokenizerStep, frozen=True, kw_only=True, tag="digits"):
    hf: ClassVar = ("Digits",)
    individual_digits: bool = False

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        return cls(individual_digits=bool(node.get("individual_digits")))

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> PreTokenize:
        return pre_tokenizers.digits(individual=self.individual_digits)


class Punctuation(PreTokenizerStep, frozen=True, kw_only=True, tag="punctuation"):
    hf: ClassVar = ("Punctuation",)
    behavior: Behavior = "isolated"

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        return cls(behavior=hf_behavior(node, at, ctx.refuse))

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> PreTokenize:
        return pre_tokenizers.punctuation(self.behavior)


class Whitespace(PreTokenizerStep, frozen=True, kw_only=True, tag="whitespace"):
    """Pieces are `\\w+` and `[^\\w\\s]+` runs; whitespace is dropped."""

    hf: ClassVar = ("Whitespace",)

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        return cls()

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> PreTokenize:
        return pre_tokenizers.whitespace()


class WhitespaceSplit(PreTokenizerStep, frozen=True, kw_only=True, tag="whitespace_split"):
    """Pieces are the runs of non-whitespace."""

    hf: ClassVar = ("WhitespaceSplit",)

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        return cls()

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> PreTokenize:
        return pre_tokenizers.whitespace_split()


PreTokenizer = Split | ByteLevel | Metaspace | Digits | Punctuation | Whitespace | WhitespaceSplit
SUPPORTED = "Sequence, " + ", ".join(name for m in get_args(PreTokenizer) for name in m.hf)


def import_pre_tokenizers(node: Any, refuse: Refuser) -> list[PreTokenizer]:
    steps = flat_steps(node, "pretokenizers", "pre_tokenizer")
    out: list[PreTokenizer] = import_steps(get_args(PreTokenizer), steps, refuse, SUPPORTED)
    return out
