"""toksvc-client: a light client of the toksvc tokenization service (httpx and msgspec only).

`Client` / `AsyncClient` talk to a running service; `client.encoding(ref)` has tiktoken's
`Encoding` interface; `client.decode_stream(ref, ...)` assembles streamed output; every problem
the service answers is raised as its typed error (`toksvc_client.errors`).
"""

from toksvc_client.aio import AsyncClient
from toksvc_client.client import Client
from toksvc_client.encoding import AsyncEncoding, Encoding
from toksvc_client.errors import (
    BadResponseError,
    ConnectFailedError,
    DisallowedSpecialTokenError,
    InputError,
    ProblemError,
    ToksvcError,
    TransportError,
    TransportTimeoutError,
    UnknownTokenIdError,
    UnknownTokenizerError,
)
from toksvc_client.streams import AsyncDecodeStream, DecodeStream
from toksvc_client.transport import RetryPolicy
from toksvc_client.wire import ChatCount, Chunk, Estimate, ModelInfo, TokenizerInfo, Truncation

__version__ = "0.1.0"
__all__ = [
    "AsyncClient",
    "AsyncDecodeStream",
    "AsyncEncoding",
    "BadResponseError",
    "ChatCount",
    "Chunk",
    "Client",
    "ConnectFailedError",
    "DecodeStream",
    "DisallowedSpecialTokenError",
    "Encoding",
    "Estimate",
    "InputError",
    "ModelInfo",
    "ProblemError",
    "RetryPolicy",
    "TokenizerInfo",
    "ToksvcError",
    "TransportError",
    "TransportTimeoutError",
    "Truncation",
    "UnknownTokenIdError",
    "UnknownTokenizerError",
]
