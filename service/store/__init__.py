"""A store's files: tokenizer files, model profiles and price files, pinned by sha256 in a
manifest, validated, and loaded into a registry; importers from the upstream files.

The names below are the public API; the modules of the sub-packages (formats/, pipeline/,
importers/) are internal and may change. Knows no Settings: callers pass what they read.
"""

from service.store.engines import default_engine, reference_engine
from service.store.formats.tokenizer import TokenizerFile, dumps, json_schema, parse
from service.store.importers.imports import add_model, add_prices, import_files
from service.store.loader import load_store
from service.store.manifest import add_to_store, read_manifest
from service.store.registry import LoadedTokenizer, Registry

__all__ = [
    "LoadedTokenizer",
    "Registry",
    "TokenizerFile",
    "add_model",
    "add_prices",
    "add_to_store",
    "default_engine",
    "dumps",
    "import_files",
    "json_schema",
    "load_store",
    "parse",
    "read_manifest",
    "reference_engine",
]
