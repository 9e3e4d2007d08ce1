"""toksvc: a tokenization microservice for LLM backends.

`service.get_encoding(name)` is the library's tiktoken-like entry point (`service.encoding`),
imported on first use so that `import service.<module>` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from service.encoding import Encoding, get_encoding, list_encoding_names

__version__ = "0.1.0"
__all__ = ["Encoding", "get_encoding", "list_encoding_names"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from service import encoding  # noqa: PLC0415 (lazy: see the docstring)

        return getattr(encoding, name)
    raise AttributeError(f"module 'service' has no attribute {name!r}")
