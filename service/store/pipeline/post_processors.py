"""Format v2's post-processor: the ids a model puts around one text (BOS/EOS), added only where a
caller asks for `add_special_tokens`, never to counts. Hugging Face's `ByteLevel` post-processor
only moves offsets: a marker, no step."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Self

import msgspec
from msgspec import Meta

from service.store.pipeline.component import Component, HfContext, Refuser, flat_steps

TokenId = Annotated[int, Meta(ge=0, le=2**24 - 1)]
SUPPORTED = "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel"


class Template(Component, frozen=True, kw_only=True):
    """The ids a model's post-processor puts around one text (Hugging Face `TemplateProcessing`
    `single`): added only when a request asks for `add_special_tokens`, never to plain counts."""

    hf: ClassVar = ("TemplateProcessing", "BertProcessing", "RobertaProcessing")
    prefix: list[TokenId] = msgspec.field(default_factory=list)
    suffix: list[TokenId] = msgspec.field(default_factory=list)

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        if node.get("type") in ("BertProcessing", "RobertaProcessing"):
            return cls(prefix=[int(node["cls"][1])], suffix=[int(node["sep"][1])])
        specials = node.get("special_tokens") or {}
        prefix: list[int] = []
        suffix: list[int] = []
        seen_text = False
        for j, item in enumerate(node.get("single") or []):
            if "Sequence" in item:
                if seen_text or item["Sequence"].get("id") != "A":
                    ctx.refuse(f"{at}.single[{j}]", "a second sequence", "one sequence A")
                seen_text = True
            elif "SpecialToken" in item:
                name = item["SpecialToken"].get("id")
                if name not in specials:
                    ctx.refuse(
                        f"{at}.single[{j}]",
                        f"special token {name!r} without ids",
                        "a special token listed in special_tokens",
                    )
                (suffix if seen_text else prefix).extend(int(x) for x in specials[name]["ids"])
        return cls(prefix=prefix, suffix=suffix)

    def check(self, at: str) -> None:
        """Nothing on its own: its ids must be tokens (`rules.check_added`)."""

    def build(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return tuple(self.prefix), tuple(self.suffix)


def import_template(node: Any, refuse: Refuser) -> Template | None:
    """The first template-making processor of the chain (ByteLevel ones are skipped)."""
    for at, step in flat_steps(node, "processors", "post_processor"):
        kind = step.get("type")
        if kind == "ByteLevel":
            continue
        if kind not in Template.hf:
            refuse(f"{at}.type", repr(kind), SUPPORTED)
        return Template.from_hf(step, at, HfContext(refuse))
    return None
