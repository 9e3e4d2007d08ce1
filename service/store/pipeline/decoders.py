"""Format v2's decoder steps: applied in order to the decoded text (every id's bytes joined, as
UTF-8). Each imports its Hugging Face types, checks its fields and builds its step of
`service.bpe.pipeline.decoders` (see `service.store.pipeline.component`).

Hugging Face's `ByteLevel`, `ByteFallback` and `Fuse` decoders make no step here: our tokens are
bytes and decoding joins them. They are markers: a `ByteLevel` decoder goes with a `ByteLevel`
pre-tokenizer, a `ByteFallback` one with the model's `byte_fallback`, and `Strip` comes after
`Fuse` (before it, it would strip every token)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Self, get_args

from msgspec import Meta

from service.bpe.pipeline import decoders
from service.bpe.pipeline.decoders import Decode
from service.store.pipeline.component import (
    HfContext,
    Refuser,
    Step,
    flat_steps,
    hf_pattern,
    import_steps,
    one_character,
)
from service.store.pipeline.pre_tokenizers import hf_scheme

SUPPORTED = "Sequence of ByteLevel, ByteFallback, Fuse, Replace, Strip (after Fuse), Metaspace"
MARKERS = frozenset({"ByteLevel", "ByteFallback", "Fuse"})


class DecoderStep(Step, frozen=True, kw_only=True):
    def build(self) -> Decode:
        raise NotImplementedError


class DecodeReplace(DecoderStep, frozen=True, kw_only=True, tag="replace"):
    """Every `pattern` (one character) becomes `content`."""

    hf: ClassVar = ("Replace",)
    pattern: str
    content: str

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        pattern, is_regex = hf_pattern(node, at, ctx.refuse)
        if is_regex or len(pattern) != 1:
            ctx.refuse(f"{at}.pattern", repr(pattern), "a String of one character")
        return cls(pattern=pattern, content=str(node["content"]))

    def check(self, at: str) -> None:
        one_character(f"{at}.pattern", self.pattern)

    def build(self) -> Decode:
        return decoders.replace(self.pattern, self.content)


class DecodeStrip(DecoderStep, frozen=True, kw_only=True, tag="strip"):
    """Up to `start` leading `content` characters are removed from the whole decoded text."""

    hf: ClassVar = ("Strip",)
    content: str = " "
    start: Annotated[int, Meta(ge=0, le=1)] = 1

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        content, start = str(node.get("content", " ")), node.get("start", 0)
        fused = "Fuse" in ctx.before
        if not fused or node.get("stop", 0) or len(content) != 1 or start not in (0, 1):
            ctx.refuse(
                at,
                "Strip before Fuse, with stop, of several characters or start > 1",
                "Strip of one character after Fuse, start 0 or 1, stop 0",
            )
        return cls(content=content, start=int(start))

    def check(self, at: str) -> None:
        one_character(f"{at}.content", self.content)

    def build(self) -> Decode:
        return decoders.strip(self.content, self.start)


class DecodeMetaspace(DecoderStep, frozen=True, kw_only=True, tag="metaspace"):
    """Every `replacement` becomes a space; with `drop_first`, those of the first token are
    dropped instead (Hugging Face's Metaspace decoder)."""

    hf: ClassVar = ("Metaspace",)
    replacement: str = "\u2581"
    drop_first: bool = True

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        scheme = hf_scheme(node, at, ctx.refuse)
        replacement = str(node.get("replacement", "\u2581"))
        return cls(replacement=replacement, drop_first=scheme != "never")

    def check(self, at: str) -> None:
        one_character(f"{at}.replacement", self.replacement)

    def build(self) -> Decode:
        if self.drop_first:
            return decoders.metaspace(self.replacement)
        return decoders.replace(self.replacement, " ")


Decoder = DecodeReplace | DecodeStrip | DecodeMetaspace


def import_decoder(
    node: Any, refuse: Refuser, *, byte_level: bool, byte_fallback: bool
) -> list[Decoder]:
    """The text steps of a decoder chain, its markers checked against the rest of the file."""
    if node is None:
        refuse("decoder", "null (the reference joins tokens with spaces)", SUPPORTED)
    steps = flat_steps(node, "decoders", "decoder")
    out: list[Decoder] = import_steps(get_args(Decoder), steps, refuse, SUPPORTED, MARKERS)
    kinds = {step.get("type") for _, step in steps}
    if ("ByteLevel" in kinds) != byte_level:
        refuse(
            "decoder",
            "a ByteLevel decoder without a ByteLevel pre-tokenizer (or the reverse)",
            "both or neither",
        )
    if ("ByteFallback" in kinds) != byte_fallback:
        refuse(
            "decoder",
            "a ByteFallback decoder without model.byte_fallback (or the reverse)",
            "both or neither",
        )
    return out
