"""What a pipeline component of format v2 is, whatever its kind.

A component is a msgspec Struct (a chain's steps are tagged: `{"type": "replace", ...}`;
unknown types and unknown fields are refused) that also says

- which Hugging Face component types it imports (`hf`) and how (`from_hf`, told where the step
  sits among its neighbours: `HfContext`), refusing what it does not implement exactly;
- what its fields must hold beyond what the schema says (`check`, raising `BrokenRule`);
- what it becomes in front of the engine (`build`: a step of `service.bpe.pipeline`).

Each kind's members live in one module (normalizers, pre_tokenizers, decoders, post_processors);
`service.store.pipeline.kinds` lists them. Adding a component is its class there, its step in
`service.bpe.pipeline`, and its row in docs/format.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, NamedTuple, NoReturn, Self, TypeVar

import regex
from msgspec import Struct

from service.bpe.engine.matching import STALLS, stalls
from service.errors import UnsupportedComponentError

S = TypeVar("S", bound="Component")


class BrokenRule(Exception):  # noqa: N818 (internal: carries a broken rule to validate())
    def __init__(self, entry: str, reason: str) -> None:
        self.entry, self.reason = entry, reason


class Refuser:
    """Raises the refusal of one component of one file."""

    def __init__(self, where: str) -> None:
        self.where = where

    def __call__(self, at: str, found: str, supported: str) -> NoReturn:
        raise UnsupportedComponentError(self.where, at, found, supported)


class HfContext(NamedTuple):
    """Where an imported step sits: the file's refuser, the Hugging Face types of the steps
    before it in the same chain (a `Sequence` flattened), and whether it is the last."""

    refuse: Refuser
    before: tuple[str, ...] = ()
    last: bool = True


class Component(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The base of every component (see the module's docstring)."""

    hf: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_hf(cls, node: dict[str, Any], at: str, ctx: HfContext) -> Self:
        raise NotImplementedError

    def check(self, at: str) -> None:
        raise NotImplementedError

    def build(self) -> Any:
        raise NotImplementedError


class Step(Component, frozen=True, kw_only=True, tag_field="type"):
    """A component that is one of a chain's steps, tagged by its `type`."""


def flat_steps(node: Any, key: str, at: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(JSON path, component) of a component and of nested `Sequence`s, in order."""
    if node is None:
        return []
    if not isinstance(node, dict):
        return [(at, {"type": repr(node)})]
    if node.get("type") == "Sequence":
        out = []
        for i, child in enumerate(node.get(key) or []):
            out += flat_steps(child, key, f"{at}.{key}[{i}]")
        return out
    return [(at, node)]


def import_steps(
    members: Iterable[type[S]],
    steps: list[tuple[str, dict[str, Any]]],
    refuse: Refuser,
    supported: str,
    markers: frozenset[str] = frozenset(),
) -> list[S]:
    """Each of `steps` imported by the member that names its type; a type in `markers` makes
    no step (its presence is what matters: the caller reads it from `steps`); any other type
    is refused, naming what is `supported`."""
    by_type = {name: member for member in members for name in member.hf}
    out: list[S] = []
    kinds = [str(step.get("type")) for _, step in steps]
    for i, (at, step) in enumerate(steps):
        member = by_type.get(kinds[i])
        if member is not None:
            ctx = HfContext(refuse, tuple(kinds[:i]), i == len(steps) - 1)
            out.append(member.from_hf(step, at, ctx))
        elif kinds[i] not in markers:
            refuse(f"{at}.type", repr(step.get("type")), supported)
    return out


def hf_pattern(node: dict[str, Any], at: str, refuse: Refuser) -> tuple[str, bool]:
    """A Hugging Face `pattern` ({"String": s} or {"Regex": r}) and whether it is a regex."""
    pattern = node.get("pattern")
    if isinstance(pattern, dict) and isinstance(pattern.get("String"), str):
        return pattern["String"], False
    if isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str):
        return pattern["Regex"], True
    refuse(f"{at}.pattern", repr(pattern), '{"String": ...} or {"Regex": ...}')


def compiles(entry: str, pattern: str) -> None:
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise BrokenRule(entry, f"does not compile: {exc}") from None
    if stalls(pattern):
        raise BrokenRule(entry, STALLS)


def one_character(entry: str, text: str) -> None:
    if len(text) != 1:
        raise BrokenRule(entry, "must be one character")
