"""Tokenizer file format (v1, and v2 with a text pipeline): the msgspec definition, parsing and
the human-readable layout.

The JSON Schema in docs/ is generated from these Structs (`toksvc schema`), so documentation and
parser cannot drift apart. Rules that a schema cannot express live in `service.store.validation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from service.bpe.vocab import IDENTITY_BYTE_IDS
from service.store.pipeline.added_tokens import AddedToken
from service.store.pipeline.decoders import Decoder
from service.store.pipeline.normalizers import Normalizer
from service.store.pipeline.post_processors import Template
from service.store.pipeline.pre_tokenizers import PreTokenizer

MAX_ID = 2**24 - 1  # ids are dense indexes into the decode table

Name = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$", description="tokenizer name")]
Version = Annotated[
    str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$", description="tokenizer version")
]
TokenId = Annotated[int, Meta(ge=0, le=MAX_ID)]
Merge = Annotated[tuple[TokenId, TokenId, TokenId], Meta(description="[left id, right id, new id]")]
ExtraToken = Annotated[tuple[TokenId, str], Meta(description="[id, hex of the token's bytes]")]


class Metadata(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    description: str = ""
    source: str = ""
    license: str = ""
    created: str = ""


class StoreFile(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The head every versioned file of a store begins with (each kind fixes its `format`)."""

    format: str
    format_version: Literal[1] = 1
    name: Name
    version: Version


class TokenizerFile(StoreFile, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One tokenizer version. See docs/format.md for the meaning of every field. The fields
    after `merges` are format v2's (V2_FIELDS): absent from a v1 file, optional in a v2 file."""

    format: Literal["toksvc-bpe"] = "toksvc-bpe"
    format_version: Literal[1, 2] = 1  # type: ignore[assignment]  # v2: tokenizer files only
    rule: Literal["pairs", "ranks"]
    pattern: str | None
    normalization: Literal["none", "NFC", "NFKC"] = "none"
    special_tokens: dict[str, TokenId] = msgspec.field(default_factory=dict)
    nonspecial_tokens: list[str] = msgspec.field(default_factory=list)
    metadata: Metadata = msgspec.field(default_factory=Metadata)
    byte_ids: list[TokenId] | None = None
    tokens: list[ExtraToken] = msgspec.field(default_factory=list)
    merges: list[Merge]
    normalizers: list[Normalizer] | None = None
    pre_tokenizers: list[PreTokenizer] | None = None
    byte_fallback: list[TokenId] | None = None
    added_tokens: list[AddedToken] | None = None
    decoder: list[Decoder] | None = None
    template: Template | None = None

    @property
    def ids_of_bytes(self) -> Sequence[int]:
        """The id of each byte value: `byte_ids`, or byte b -> id b when the file has none."""
        return IDENTITY_BYTE_IDS if self.byte_ids is None else self.byte_ids


V2_FIELDS = (
    "normalizers",
    "pre_tokenizers",
    "byte_fallback",
    "added_tokens",
    "decoder",
    "template",
)

_decoder = msgspec.json.Decoder(TokenizerFile)


def parse(data: bytes) -> TokenizerFile:
    """Parse and type-check a file's bytes; raises msgspec.ValidationError/DecodeError."""
    return _decoder.decode(data)


def dumps(tf: TokenizerFile) -> bytes:
    """Serialize with one merge, special token or metadata field per line: readable and diffable."""

    def enc(value: Any) -> str:
        return msgspec.json.encode(value).decode("utf-8")

    parts = []
    for key, value in msgspec.to_builtins(tf).items():
        if key in V2_FIELDS and value is None:  # a v1 file stays byte for byte what it was
            continue
        if isinstance(value, dict) and value:
            text = "{\n    " + ",\n    ".join(f"{enc(k)}: {enc(v)}" for k, v in value.items())
            text += "\n  }"
        elif isinstance(value, list) and value and isinstance(value[0], (list, tuple, dict)):
            text = "[\n    " + ",\n    ".join(map(enc, value)) + "\n  ]"
        else:
            text = enc(value)
        parts.append(f"  {enc(key)}: {text}")
    return ("{\n" + ",\n".join(parts) + "\n}\n").encode("utf-8")


def json_schema() -> dict[str, Any]:
    return msgspec.json.schema(TokenizerFile)
