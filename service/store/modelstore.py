"""Loading the model profiles and price files the manifests list, after the tokenizers.

Each file's sha256 is checked against its manifest entry before it is parsed. A model whose
tokenizer is not loaded is a failure naming both; so is an alias that two models claim, and a
model priced by two price files. Failures are collected, never raised: the rest loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from service.errors import StoreError
from service.store.formats.model import ModelFile, Price, parse_model, parse_prices
from service.store.manifest import MANIFEST, Loaded, Manifest, ManifestEntry
from service.store.reading import read_verified


@dataclass(frozen=True, slots=True, eq=False)
class LoadedModel(Loaded):
    profile: ModelFile
    tokenizer_ref: str


@dataclass(frozen=True, slots=True)
class LoadedPrice:
    price: Price
    currency: str
    file_ref: str  # name@version of the price file
    file_sha256: str


@dataclass(slots=True)
class ModelTables:
    models: dict[str, LoadedModel] = field(default_factory=dict)  # by name@version
    names: dict[str, str] = field(default_factory=dict)  # name or alias -> name@version
    prices: dict[str, LoadedPrice] = field(default_factory=dict)  # model name -> price
    failures: list[StoreError] = field(default_factory=list)


def _read(root: Path, entry: ManifestEntry) -> bytes:
    return read_verified(root, entry.path, entry.sha256)  # bounded; hashed before parsing


def load_models(
    manifests: Sequence[tuple[Path, Manifest]], tokenizers: Mapping[str, object]
) -> ModelTables:
    """Load every model profile and price file of the manifests (`tokenizers`: loaded refs)."""
    tables = ModelTables()
    owners: dict[str, Path] = {}
    for root, manifest in manifests:
        for entry in manifest.models:
            where = str(root / entry.path)
            try:
                if owners.setdefault(entry.name, root) != root:
                    raise StoreError(
                        str(root / MANIFEST),
                        f"lists model {entry.ref}, but "
                        f"{entry.name} is already in {owners[entry.name] / MANIFEST}",
                    )
                mf = parse_model(_read(root, entry), where)
                _check_model(mf, entry, where, tokenizers)
            except StoreError as exc:
                tables.failures.append(exc)
                continue
            loaded = LoadedModel(*entry.identity, mf, mf.tokenizer)
            tables.models[entry.ref] = loaded
            _name(tables, entry.ref, entry.ref, where)
            if entry.default:
                _name(tables, entry.name, entry.ref, where)
                for alias in mf.aliases:
                    _name(tables, alias, entry.ref, where)
    for root, manifest in manifests:
        for entry in manifest.prices:
            if not entry.default:
                continue  # only a price file's default version is in force
            where = str(root / entry.path)
            try:
                pf = parse_prices(_read(root, entry), where)
            except StoreError as exc:
                tables.failures.append(exc)
                continue
            for price in pf.prices:
                if (other := tables.prices.get(price.model)) is not None:
                    tables.failures.append(
                        StoreError(
                            where,
                            f"prices {price.model}, which {other.file_ref} prices too; keep one",
                        )
                    )
                    continue
                tables.prices[price.model] = LoadedPrice(
                    price, pf.currency, entry.ref, entry.sha256
                )
    return tables


def _check_model(
    mf: ModelFile, entry: ManifestEntry, where: str, tokenizers: Mapping[str, object]
) -> None:
    if (mf.name, mf.version) != (entry.name, entry.version):
        raise StoreError(where, f"file says {mf.name}@{mf.version}, manifest says {entry.ref}")
    if mf.tokenizer not in tokenizers:
        raise StoreError(
            where,
            f"model {entry.ref} needs tokenizer {mf.tokenizer}, which is not "
            "loaded; import it or fix the model's tokenizer field",
        )


def _name(tables: ModelTables, name: str, ref: str, where: str) -> None:
    if (other := tables.names.setdefault(name, ref)) != ref:
        tables.failures.append(StoreError(where, f"{name} already names {other}"))
