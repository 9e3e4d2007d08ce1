"""toksvc: a tokenization microservice for LLM backends, and the library it serves.

The public API: this package's names (`get_encoding`, tiktoken's interface over a store's
tokenizer; `load_registry`, every tokenizer of the stores `Settings` name), `service.bpe`,
`service.store`, `service.models` and `service.errors`. Every other module is internal.
The names here are imported on first use, so that `import service.<module>` stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from service.encoding import Encoding, get_encoding, list_encoding_names
    from service.runtime import engine_factory, load_registry
    from service.settings import BUNDLED_STORE, Settings

__version__ = "0.1.0"
_HOMES = {
    "Encoding": "service.encoding",
    "get_encoding": "service.encoding",
    "list_encoding_names": "service.encoding",
    "engine_factory": "service.runtime",
    "load_registry": "service.runtime",
    "BUNDLED_STORE": "service.settings",
    "Settings": "service.settings",
}
__all__ = [
    "BUNDLED_STORE",
    "Encoding",
    "Settings",
    "engine_factory",
    "get_encoding",
    "list_encoding_names",
    "load_registry",
]


def __getattr__(name: str) -> object:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'service' has no attribute {name!r}")
