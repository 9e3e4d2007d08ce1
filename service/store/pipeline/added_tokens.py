"""Format v2's added tokens: literals split out of the text before the model sees it."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Self

from msgspec import Meta

from service.bpe.pipeline.added_tokens import AddedLiteral
from service.store.pipeline.component import BrokenRule, Component, HfContext, Refuser

TokenId = Annotated[int, Meta(ge=0, le=2**24 - 1)]


class AddedToken(Component, frozen=True, kw_only=True):
    """A literal split out of the text before the model sees it. `special`: under the special
    token policy (an error unless allowed); otherwise always its id, as ordinary text.
    `normalized`: matched in the normalized text instead of the raw text; `lstrip`/`rstrip`: the
    match takes the whitespace on that side along; `single_word`: only where no word character
    touches it."""

    hf: ClassVar = ("added_tokens",)
    content: str
    id: TokenId
    special: bool = False
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False
    normalized: bool = False

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        """`ctx.before` is ("normalizer",) when the file has one: otherwise matching on the
        normalized text is matching on the raw text, and `normalized` is dropped."""
        try:
            return cls(
                content=str(node["content"]),
                id=int(node["id"]),
                special=bool(node.get("special")),
                lstrip=bool(node.get("lstrip")),
                rstrip=bool(node.get("rstrip")),
                single_word=bool(node.get("single_word")),
                normalized="normalizer" in ctx.before and bool(node.get("normalized")),
            )
        except (KeyError, TypeError, ValueError):
            ctx.refuse(
                at,
                "a malformed entry",
                "{content, id, special, lstrip, rstrip, single_word, normalized}",
            )

    def check(self, at: str) -> None:
        """Its id against the other tokens: `rules.check_added`."""
        if not self.content:
            raise BrokenRule(at, "an added token needs a non-empty content")

    def build(self) -> AddedLiteral:
        return AddedLiteral(
            self.content,
            self.id,
            self.special,
            self.lstrip,
            self.rstrip,
            self.single_word,
            self.normalized,
        )


def import_added(entries: list[Any], refuse: Refuser, normalized_text: bool) -> list[AddedToken]:
    ctx = HfContext(refuse, ("normalizer",) if normalized_text else ())
    return [AddedToken.from_hf(e, f"added_tokens[{i}]", ctx) for i, e in enumerate(entries)]
