"""Adding tokenizers, model profiles and price files to a user's store: which store is written
(never the bundled one), which importer reads which files (tiktoken rank files: `ranks`;
Mistral's tekken files: `tekken`; SentencePiece models: `sentencepiece`; Hugging Face
`tokenizer.json`: `hf_tokenizer`; GPT-2's `encoder.json` + `vocab.bpe`: `gpt2`), what a preset
brings, what the user's words add (description, license), and the file a trained model becomes.
`add_to_store` validates each file before writing it; a model profile or price file is checked
as the loader checks it and kept byte for byte. Every failure is a `StoreError` naming the file
and the field.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from service.bpe.engine.patterns import GPT2_PATTERN
from service.bpe.pipeline.normalizers import Normalization
from service.bpe.trainer import TrainedModel
from service.errors import StoreError
from service.store.formats.model import parse_model, parse_prices
from service.store.formats.presets import PRESETS, resolve_pattern
from service.store.formats.tokenizer import TokenizerFile
from service.store.importers.gpt2 import from_gpt2, from_hf_json
from service.store.importers.hf_tokenizer import from_tokenizer_json
from service.store.importers.ranks import from_tiktoken
from service.store.importers.sentencepiece import from_sentencepiece
from service.store.importers.sources import Found, Naming, read_source, source_note
from service.store.importers.tekken import from_tekken
from service.store.manifest import ManifestEntry, add_entry

ImportKind = Literal["tiktoken", "tekken", "sentencepiece", "hf", "gpt2"]
FILES_PER_KIND: dict[str, int] = {
    "tiktoken": 1,
    "tekken": 1,
    "sentencepiece": 1,
    "hf": 1,
    "gpt2": 2,
}


def target_store(named: Path | None, stores: Sequence[Path], *, read_only: Path) -> Path:
    """The one store `train` and `import` write to: the one named, else the last of `stores`;
    never `read_only` (the bundled store)."""
    store = named or stores[-1]
    if store.resolve() == read_only:
        raise StoreError(
            str(store),
            "the bundled store is read-only; name your own store with "
            "--store DIR (created if missing), then serve both with "
            "--store bundled --store DIR",
        )
    return store


def import_files(
    kind: ImportKind,
    files: Sequence[Path],
    naming: Naming,
    *,
    preset: str | None = None,
    pattern: str | None = None,
) -> TokenizerFile:
    """Import `files` of one kind. `preset` (a name in PRESETS) gives the pattern, special tokens
    and normalization of a known encoding; `pattern` (a preset pattern name, a regex, or `none`)
    overrides its pattern. A Hugging Face file brings its own special tokens and normalization,
    and its own pattern unless one is chosen (by `pattern` or the preset), and so does a tekken
    file (it has no normalization); GPT-2's files are unnormalized, split by GPT-2's pattern
    unless one is chosen."""
    if len(files) != FILES_PER_KIND[kind]:
        raise StoreError(
            kind, f"import {kind} takes {FILES_PER_KIND[kind]} file(s), got {len(files)}"
        )
    known = PRESETS.get(preset) if preset else None
    chosen = resolve_pattern(pattern) if pattern is not None else known.pattern if known else None
    specials = known.special_tokens if known else {}
    if kind == "tiktoken":
        found = from_tiktoken(
            files[0],
            pattern=chosen,
            special_tokens=specials,
            normalization=known.normalization if known else "none",
        )
    elif kind == "tekken":
        found = from_tekken(files[0])
        if chosen is not None:
            found = msgspec.structs.replace(found, pattern=chosen)
    elif kind == "sentencepiece":
        found = from_sentencepiece(files[0])
    elif kind == "gpt2":
        found = from_gpt2(
            files[0], files[1], pattern=chosen or GPT2_PATTERN, special_tokens=specials
        )
    elif chosen is not None:  # the v1 byte-level import, with the pattern chosen
        found = from_hf_json(files[0], pattern=chosen)
    else:
        found = from_tokenizer_json(files[0])
    if known and known.nonspecial_tokens and kind != "hf":
        found = msgspec.structs.replace(found, nonspecial_tokens=list(known.nonspecial_tokens))
    return found.named(naming)


def trained_file(
    model: TrainedModel, corpus: Sequence[Path], naming: Naming, normalization: Normalization
) -> TokenizerFile:
    """The tokenizer file of a model trained on the `corpus` files."""
    source = f"trained by toksvc on {source_note(*corpus)}"
    found = Found("pairs", model.merges, model.pattern, normalization, model.special_tokens, source)
    return found.named(naming)


def add_model(
    store: Path, path: Path, tokenizers: Collection[str], *, default: bool = True
) -> ManifestEntry:
    """Add the model profile at `path` to `store`, pinned; its tokenizer must be one of
    `tokenizers` (the refs the served stores list), as the loader will require."""
    data = read_source(path)
    profile = parse_model(data, str(path))
    if profile.tokenizer not in tokenizers:
        raise StoreError(
            str(path),
            f"tokenizer: {profile.tokenizer} is in none of the stores "
            "served with this one; import it first or fix the profile",
        )
    return add_entry(store, "models", profile.name, profile.version, data, default=default)


def add_prices(store: Path, path: Path, *, default: bool = True) -> ManifestEntry:
    """Add the price file at `path` to `store`, pinned (only a name's default version is in
    force)."""
    data = read_source(path)
    prices = parse_prices(data, str(path))
    return add_entry(store, "prices", prices.name, prices.version, data, default=default)
