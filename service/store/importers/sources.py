"""What an import reads and what it becomes: reading the source files (every failure a
`StoreError` naming the file), the note of their hashes kept in `metadata.source`, the vocabulary
an importer finds in them (`Found`), and the tokenizer file it becomes once the user names it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from service.bpe import Normalization, Rule
from service.errors import StoreError
from service.store.formats.surrogates import lone_surrogate
from service.store.formats.tokenizer import Metadata, TokenizerFile
from service.store.manifest import sha256_hex

_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


@dataclass(frozen=True, slots=True)
class Naming:
    """What the user says of a new version: its name and version, and its description and
    license (kept in `metadata`; the source and the date come from the files)."""

    name: str
    version: str
    description: str = ""
    license: str = ""


class Found(msgspec.Struct, frozen=True):
    """A vocabulary read from source files (or trained), with the split pattern, normalization
    and special tokens that go with it and the note of where it came from; not yet named. Its
    fields but `source` are the tokenizer file's, by the same names."""

    rule: Rule
    merges: list[tuple[int, int, int]]
    pattern: str | None
    normalization: Normalization
    special_tokens: dict[str, int]
    source: str
    byte_ids: list[int] | None = None  # None: byte b is id b
    tokens: list[tuple[int, str]] = msgspec.field(default_factory=list)  # ranks: no merge makes
    nonspecial_tokens: list[str] = msgspec.field(default_factory=list)  # added, not special
    byte_fallback: list[int] | None = None  # format v2 (with `v2`)
    v2: dict[str, Any] | None = None  # format v2's pipeline fields, by name

    def named(self, naming: Naming) -> TokenizerFile:
        """The tokenizer file, named by the user and dated today (format v2 when `v2`)."""
        fields = msgspec.structs.asdict(self)
        meta = Metadata(
            description=naming.description,
            license=naming.license,
            source=fields.pop("source"),
            created=today(),
        )
        v2 = fields.pop("v2")
        if v2 is None:
            fields.pop("byte_fallback")
            return TokenizerFile(name=naming.name, version=naming.version, metadata=meta, **fields)
        return TokenizerFile(
            format_version=2,
            name=naming.name,
            version=naming.version,
            metadata=meta,
            **fields,
            **v2,
        )


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def read_source(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StoreError(str(path), f"cannot be read ({exc.strerror})") from None


def read_json(path: Path, *, text_checked: bool = True) -> Any:
    """The parsed JSON file. `text_checked`: a string (a key or a value) that holds a lone
    surrogate (a `\\ud800` escape with no other half) is refused, naming where it is: it would
    become a token or a text of a tokenizer file, which is UTF-8 (a config whose one kept string
    is checked on its own passes False)."""
    data = read_source(path)
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreError(str(path), f"is not valid JSON: {exc}") from None
    except RecursionError:
        raise StoreError(str(path), "is not valid JSON: nested too deeply") from None
    if text_checked and _may_hold_surrogates(data) and (at := lone_surrogate(doc)) is not None:
        raise StoreError(
            str(path),
            f"{at}: a lone surrogate (a \\u escape with no other half) is no Unicode scalar "
            "value and cannot be written as UTF-8; fix or remove it",
        )
    return doc


def _may_hold_surrogates(data: bytes) -> bool:
    """Whether the JSON text can parse to a surrogate: a `\\uD8xx`..`\\uDFxx` escape, or one
    written as UTF-8-like bytes (which `json` lets through), or a text not in UTF-8. A text
    without any costs no walk of the parsed document (0.5 s for a 150,000-token file)."""
    if json.detect_encoding(data) not in ("utf-8", "utf-8-sig"):
        return True
    return _SURROGATE_BYTES.search(data) is not None


def source_note(*paths: Path) -> str:
    return "; ".join(f"{p.name} sha256:{sha256_hex(read_source(p))}" for p in paths)
