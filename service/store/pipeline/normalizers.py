"""Format v2's normalizers: applied in order to each stretch of ordinary text (between added
tokens). Each imports its Hugging Face types, checks its fields and builds its step of
`service.bpe.pipeline.normalizers` (see `service.store.pipeline.component`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self, get_args

from service.bpe.pipeline import normalizers
from service.bpe.pipeline.normalizers import Normalize
from service.store.pipeline.component import (
    HfContext,
    Refuser,
    Step,
    compiles,
    flat_steps,
    hf_pattern,
    import_steps,
)


class NormalizerStep(Step, frozen=True, kw_only=True):
    def build(self) -> Normalize:
        raise NotImplementedError


class UnicodeForm(NormalizerStep, frozen=True, kw_only=True, tag="unicode"):
    hf: ClassVar = ("NFC", "NFKC", "NFD", "NFKD")
    form: Literal["NFC", "NFKC", "NFD", "NFKD"]

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        return cls(form=node["type"])

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> Normalize:
        return normalizers.unicode_form(self.form)


class Lowercase(NormalizerStep, frozen=True, kw_only=True, tag="lowercase"):
    hf: ClassVar = ("Lowercase",)

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        return cls()

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> Normalize:
        return normalizers.lowercase()


class Replace(NormalizerStep, frozen=True, kw_only=True, tag="replace"):
    """Every match of `pattern` (a literal, or a regex when `regex`) becomes `content`."""

    hf: ClassVar = ("Replace",)
    pattern: str
    regex: bool = False
    content: str

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        pattern, is_regex = hf_pattern(node, at, ctx.refuse)
        return cls(pattern=pattern, regex=is_regex, content=str(node["content"]))

    def check(self, at: str) -> None:
        if self.regex:
            compiles(f"{at}.pattern", self.pattern)

    def build(self) -> Normalize:
        return normalizers.replace(self.pattern, self.content, is_regex=self.regex)


class Prepend(NormalizerStep, frozen=True, kw_only=True, tag="prepend"):
    """`prepend` goes in front of every non-empty stretch of ordinary text."""

    hf: ClassVar = ("Prepend",)
    prepend: str

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        return cls(prepend=str(node["prepend"]))

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> Normalize:
        return normalizers.prepend(self.prepend)


class Strip(NormalizerStep, frozen=True, kw_only=True, tag="strip"):
    """Whitespace removed from the left and/or right end."""

    hf: ClassVar = ("Strip",)
    left: bool = True
    right: bool = True

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        return cls(left=bool(node.get("strip_left")), right=bool(node.get("strip_right")))

    def check(self, at: str) -> None:
        """Nothing beyond the schema."""

    def build(self) -> Normalize:
        return normalizers.strip(left=self.left, right=self.right)


Normalizer = UnicodeForm | Lowercase | Replace | Prepend | Strip
SUPPORTED = "Sequence, " + ", ".join(name for m in get_args(Normalizer) for name in m.hf)


def import_normalizers(node: Any, refuse: Refuser) -> list[Normalizer] | None:
    steps = flat_steps(node, "normalizers", "normalizer")
    out: list[Normalizer] = import_steps(get_args(Normalizer), steps, refuse, SUPPORTED)
    return out or None
