"""Every pipeline component has its one home: each member of each kind imports its Hugging Face
types, checks its own rules, builds its step, and has its row in docs/format.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from service.store.pipeline.added_tokens import AddedToken
from service.store.pipeline.component import BrokenRule, Component, HfContext, Refuser
from service.store.pipeline.decoders import DecodeMetaspace, DecodeReplace, DecodeStrip
from service.store.pipeline.kinds import KINDS
from service.store.pipeline.normalizers import Lowercase, Prepend, Replace, Strip, UnicodeForm
from service.store.pipeline.post_processors import Template
from service.store.pipeline.pre_tokenizers import (
    ByteLevel,
    Digits,
    Metaspace,
    Punctuation,
    Split,
    Whitespace,
    WhitespaceSplit,
)

DOCS = Path(__file__).resolve().parents[3] / "docs" / "format.md"
PATTERN = {"String": " "}
# one Hugging Face node per member, and what it imports as
SAMPLES: dict[type[Component], tuple[dict[str, Any], Component]] = {
    UnicodeForm: ({"type": "NFKC"}, UnicodeForm(form="NFKC")),
    Lowercase: ({"type": "Lowercase"}, Lowercase()),
    Replace: (
        {"type": "Replace", "pattern": PATTERN, "content": "\u2581"},
        Replace(pattern=" ", content="\u2581"),
    ),
    Prepend: ({"type": "Prepend", "prepend": "\u2581"}, Prepend(prepend="\u2581")),
    Strip: ({"type": "Strip", "strip_left": True}, Strip(left=True, right=False)),
    Split: (
        {"type": "Split", "pattern": {"Regex": r"\d+"}, "behavior": "Removed"},
        Split(pattern=r"\d+", behavior="removed"),
    ),
    ByteLevel: ({"type": "ByteLevel", "use_regex": False}, ByteLevel(use_regex=False)),
    Metaspace: (
        {"type": "Metaspace", "prepend_scheme": "first"},
        Metaspace(prepend_scheme="first"),
    ),
    Digits: ({"type": "Digits", "individual_digits": True}, Digits(individual_digits=True)),
    Punctuation: (
        {"type": "Punctuation", "behavior": "Contiguous"},
        Punctuation(behavior="contiguous"),
    ),
    Whitespace: ({"type": "Whitespace"}, Whitespace()),
    WhitespaceSplit: ({"type": "WhitespaceSplit"}, WhitespaceSplit()),
    DecodeReplace: (
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        DecodeReplace(pattern="\u2581", content=" "),
    ),
    DecodeStrip: ({"type": "Strip", "content": " ", "start": 1}, DecodeStrip(start=1)),
    DecodeMetaspace: (
        {"type": "Metaspace", "prepend_scheme": "never"},
        DecodeMetaspace(drop_first=False),
    ),
    Template: (
        {"type": "BertProcessing", "cls": ["[CLS]", 101], "sep": ["[SEP]", 102]},
        Template(prefix=[101], suffix=[102]),
    ),
    AddedToken: (
        {"content": "<x>", "id": 7, "special": True, "normalized": True},
        AddedToken(content="<x>", id=7, special=True, normalized=True),
    ),
}
MEMBERS = [(kind, member) for kind, k in KINDS.items() for member in k.members]


def docs_rows() -> set[tuple[str, str]]:
    text = DOCS.read_text("utf-8").split("### Components", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| (\w+) \| `(\w+)` \|", text, re.MULTILINE)) - {("kind", "type")}


def name_of(kind: str, member: type[Component]) -> str:
    tag = member.__struct_config__.tag
    return tag if isinstance(tag, str) else KINDS[kind].field


@pytest.mark.parametrize(("kind", "member"), MEMBERS, ids=lambda m: getattr(m, "__name__", m))
def test_every_component_has_an_import_a_rule_a_builder_and_a_docs_row(
    kind: str, member: type[Component]
) -> None:
    for method in ("from_hf", "check", "build"):
        assert method in vars(member), f"{member.__name__} has no {method} of its own"
    assert member.hf, f"{member.__name__} names no Hugging Face type"
    node, expected = SAMPLES[member]
    ctx = HfContext(Refuser("sample"), ("Fuse", "normalizer"))  # what Strip and added tokens ask
    imported = member.from_hf(node, "at", ctx)
    assert imported == expected
    imported.check("at")
    assert imported.build() is not None
    assert (kind, name_of(kind, member)) in docs_rows()


def test_no_two_members_of_a_kind_claim_a_hugging_face_type() -> None:
    for kind in KINDS.values():
        names = [name for member in kind.members for name in member.hf]
        assert len(names) == len(set(names)), kind.field


def test_the_docs_list_no_component_the_code_lacks() -> None:
    assert docs_rows() == {(kind, name_of(kind, member)) for kind, member in MEMBERS}


def test_a_broken_rule_names_its_entry() -> None:
    with pytest.raises(BrokenRule) as broken:
        Split(pattern="(").check("pre_tokenizers[2]")
    assert broken.value.entry == "pre_tokenizers[2].pattern"
    with pytest.raises(BrokenRule) as broken:
        DecodeReplace(pattern="ab", content=" ").check("decoder[0]")
    assert broken.value.entry == "decoder[0].pattern"


def test_each_tagged_member_round_trips_through_the_file_format() -> None:
    for member, (_, sample) in SAMPLES.items():
        if isinstance(member.__struct_config__.tag, str):
            data = msgspec.json.encode(sample)
            assert msgspec.json.decode(data, type=member) == sample
