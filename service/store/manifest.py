"""The store's manifest: which files exist, their sha256, and the default version per name.

A file's hash lives here and never inside the file it covers. Each entry's path is fixed as
`<name>/<version>.json`, so a manifest cannot point outside the store.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct

from service.errors import FormatError, ManifestError, StoreError
from service.store.formats.surrogates import lone_surrogate
from service.store.formats.tokenizer import Name, TokenizerFile, Version, dumps, parse
from service.store.reading import MAX_MANIFEST_BYTES, read_hashed
from service.store.validation import validate
from service.store.writing import write_files

MANIFEST = "manifest.json"
Sha256 = Annotated[str, Meta(pattern=r"^[0-9a-f]{64}$")]
MAX_ENTRIES = 1000  # a manifest of 10,008 versions took 57 s and 11 GB to load in one worker
EntryKind = Literal["tokenizers", "models", "prices"]
LAYOUTS: dict[EntryKind, str] = {  # where each kind of file lives in a store
    "tokenizers": "{}/{}.json",
    "models": "models/{}@{}.json",
    "prices": "prices/{}@{}.json",
}


class ManifestEntry(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    name: Name
    version: Version
    path: str
    sha256: Sha256
    default: bool = False

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def identity(self) -> tuple[str, str, str, bool]:
        """Name, version, sha256 and default mark: the fields of `Loaded`, in order."""
        return self.name, self.version, self.sha256, self.default


@dataclass(frozen=True, slots=True, eq=False)
class Loaded:
    """What was loaded from one manifest entry (a tokenizer, a model profile): the entry's
    name, version, sha256 and default mark (built `Loaded(*entry.identity, ...)`)."""

    name: str
    version: str
    sha256: str
    is_default: bool

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


class Manifest(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    format: Literal["toksvc-manifest"] = "toksvc-manifest"
    format_version: Literal[1] = 1
    tokenizers: list[ManifestEntry] = msgspec.field(default_factory=list)
    # model profiles (path models/<name>@<version>.json) and price files (prices/...); optional
    models: list[ManifestEntry] = msgspec.field(default_factory=list)
    prices: list[ManifestEntry] = msgspec.field(default_factory=list)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_manifest(store: Path) -> Manifest:
    return load_manifest(store)[0]


def load_manifest(store: Path) -> tuple[Manifest, str]:
    """The store's manifest and the sha256 of its bytes, read through the store's one gate
    (`service.store.reading`): a regular file of at most MAX_MANIFEST_BYTES. The manifest pins
    every file's hash, so its own hash names the whole store state a worker loaded."""
    path = store / MANIFEST
    try:
        data, sha256 = read_hashed(store, MANIFEST, MAX_MANIFEST_BYTES)
    except StoreError as exc:
        hint = "; is this a store?" if exc.reason.startswith("cannot be read") else ""
        raise ManifestError(exc.path, exc.reason + hint) from None
    try:
        manifest = msgspec.json.decode(data, type=Manifest)
    except msgspec.MsgspecError as exc:
        raise ManifestError(str(path), f"is not a valid manifest: {exc}") from None
    check_manifest(manifest, str(path))
    return manifest, sha256


def check_manifest(manifest: Manifest, where: str) -> None:
    total = len(manifest.tokenizers) + len(manifest.models) + len(manifest.prices)
    if total > MAX_ENTRIES:
        raise ManifestError(
            where, f"lists {total} files, over the limit of {MAX_ENTRIES}; split the store"
        )
    for kind, layout in LAYOUTS.items():
        _check_entries(getattr(manifest, kind), kind, layout, where)


def _check_entries(entries: list[ManifestEntry], kind: str, layout: str, where: str) -> None:
    refs: set[str] = set()
    defaults: dict[str, str] = {}
    for i, e in enumerate(entries):
        if e.path != layout.format(e.name, e.version):
            raise ManifestError(
                where, f"{kind}[{i}]: path must be {layout.format(e.name, e.version)}"
            )
        if e.ref in refs:
            raise ManifestError(where, f"{kind}[{i}]: {e.ref} is listed twice")
        refs.add(e.ref)
        if e.default:
            if e.name in defaults:
                raise ManifestError(
                    where,
                    f"{kind}[{i}]: {e.name} has two default versions "
                    f"({defaults[e.name]} and {e.version})",
                )
            defaults[e.name] = e.version
    for name in {e.name for e in entries} - defaults.keys():
        raise ManifestError(where, f"{name} has no default version; mark one with default: true")


def add_to_store(store: Path, tf: TokenizerFile, *, default: bool = True) -> ManifestEntry:
    """Write the tokenizer file and its manifest entry (replacing an entry of the same version).

    The file is checked exactly as the loader will check it (parsed back and validated) before
    anything is written, so the store never holds a file that would not load.
    """
    where = str(store / LAYOUTS["tokenizers"].format(tf.name, tf.version))
    try:
        data = dumps(tf)
    except UnicodeEncodeError:  # a lone surrogate: command-line bytes not in UTF-8 become one
        at = lone_surrogate(msgspec.to_builtins(tf)) or "file"
        raise FormatError(
            where,
            at,
            "a lone surrogate is no Unicode scalar value and cannot be written as UTF-8 "
            "(text given on the command line must be UTF-8)",
        ) from None
    try:
        parsed = parse(data)
    except msgspec.MsgspecError as exc:
        raise FormatError(where, "file", f"would not load: {exc}") from None
    validate(parsed, where)
    return add_entry(store, "tokenizers", tf.name, tf.version, data, default=default)


def add_entry(
    store: Path, kind: EntryKind, name: str, version: str, data: bytes, *, default: bool = True
) -> ManifestEntry:
    """Write a checked file of `kind` and its manifest entry, pinned by its sha256 (replacing an
    entry of the same version). The first version of a name is always its default; `default`
    makes a later one the default. Both files are written to temporary names, then renamed
    (`service.store.writing`): a reader never sees half a file, and a failed write (a read-only
    store, a full disk) is a StoreError that leaves the store as it was."""
    manifest = read_manifest(store) if (store / MANIFEST).exists() else Manifest()
    current: list[ManifestEntry] = getattr(manifest, kind)
    others = [e for e in current if (e.name, e.version) != (name, version)]
    is_default = default or not any(e.name == name for e in others)
    path = LAYOUTS[kind].format(name, version)
    entry = ManifestEntry(
        name=name, version=version, path=path, sha256=sha256_hex(data), default=is_default
    )
    if is_default:
        others = [
            msgspec.structs.replace(e, default=False) if e.name == name else e for e in others
        ]
    entries = sorted([*others, entry], key=lambda e: (e.name, e.version))
    new_manifest = msgspec.structs.replace(manifest, **{kind: entries})
    check_manifest(new_manifest, str(store / MANIFEST))
    manifest_data = msgspec.json.format(msgspec.json.encode(new_manifest)) + b"\n"
    write_files([(store / entry.path, data), (store / MANIFEST, manifest_data)])
    return entry
