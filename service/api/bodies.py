"""JSON request bodies: read within a deadline, decoded once, strictly, into the route's Struct,
within the batch limits.

A route declares its body by type only (`data: EncodeRequest`). `StrictBodies`, a serialization
plugin, gives every route whose body is a request Struct (`wire.RequestBody`) the `StrictBody` DTO:
Litestar hands it the raw bytes and it decodes them with msgspec in one strict pass (`"1"` is
not the id 1; unknown fields are refused). Litestar's own path would parse the JSON and then
convert it leniently, so the API's promise needed a second, strict decode before it; now there
is one (`decode_body`; the hot path of encode and count uses it too, with the same decoder).
A body the JSON parser rejects may hold a lone surrogate escape (\\ud800, which is no character):
that is a 422 naming its offset, anything else a 400 with the parser's reason.

A body over INLINE_DECODE_BYTES (256 KiB) is decoded, and scanned, in a thread (`run_work`, as
the engine's work): `BodyRequest` does it once the body is read and `StrictBody` hands on what
it gave, its value or its error, so the answer is the one an inline decode gives. The scan for
lone surrogates is one search per 64 KiB, so the event loop gets the GIL between two of them
(an 8 MB body of surrogate pairs: one search of 0.36 s held it all along).

`BodyRequest` reads the body within TOKSVC_BODY_SECONDS: a client that sends it more slowly gets
a 408 and the worker moves on. A body declared as something else than JSON (a form, say) is a
415 before it is read (`json_media_type`); no `Content-Type` at all is taken as JSON.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Generator
from typing import Any, ClassVar

import msgspec
from litestar import Request
from litestar.dto import AbstractDTO
from litestar.dto.data_structures import DTOFieldDefinition
from litestar.exceptions import ClientException, ValidationException
from litestar.handlers import BaseRouteHandler
from litestar.plugins import SerializationPlugin
from litestar.typing import FieldDefinition

from service.api.budget import INLINE_DECODE_BYTES, check_items, run_work
from service.api.wire.tokens import DecodeRequest, RequestBody
from service.api.worker import worker_of
from service.errors import LimitExceededError, RequestTimeoutError, SurrogateError
from service.settings import Settings

# with every escaped backslash blanked, a surrogate escape that is not half of a pair
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"  # a high, no low after
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a low, no high before
)
_SCAN_CHUNK = 64 * 1024  # bytes of body searched in one call (~3 ms of the GIL at worst)
_SCAN_AHEAD = 12  # what a match starting in a chunk reads past it: 6 bytes + 6 of lookahead


def json_media_type(content_type: str | None) -> bool:
    """Whether a request's `Content-Type` may be a JSON body: absent, `application/json` or a
    `+json` type (parameters such as `charset` aside)."""
    if not content_type:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


class BodyRequest(Request[Any, Any, Any]):
    decoded: _Decoded | None = None  # a large body's decoding, done in a thread by `body`

    async def body(self) -> bytes:
        content_type = self.headers.get("content-type")
        if self.route_handler.handler_id in StrictBody.decoders and not json_media_type(
            content_type
        ):
            raise ClientException(
                f"the body must be JSON (application/json), not {content_type}", status_code=415
            )
        seconds = worker_of(self.app).settings.body_seconds
        try:
            async with asyncio.timeout(seconds):
                body = await super().body()
        except TimeoutError:
            raise RequestTimeoutError(seconds) from None
        decoder = StrictBody.decoders.get(self.route_handler.handler_id)
        if not body and decoder is not None:
            # Litestar hands an empty body to no DTO: it is malformed JSON all the same
            raise ValidationException("malformed JSON: the body is empty")
        if decoder is not None and len(body) > INLINE_DECODE_BYTES and not _decoded(self, body):
            settings = worker_of(self.app).settings
            self.decoded = await run_work(
                len(body),
                lambda _: _Decoded.of(decoder, body, settings),
                inline_bytes=INLINE_DECODE_BYTES,
            )
        return body


class _Decoded:
    """What decoding a body gave (in a thread): its value or the error to raise."""

    __slots__ = ("body", "error", "value")

    def __init__(self, body: bytes, value: Any, error: Exception | None) -> None:
        self.body, self.value, self.error = body, value, error

    @classmethod
    def of(cls, decoder: msgspec.json.Decoder[Any], body: bytes, settings: Settings) -> _Decoded:
        try:
            return cls(body, decode_body(decoder, body, settings), None)
        except Exception as error:  # raised again by `StrictBody`, where an inline decode raises
            return cls(body, None, error)

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def _decoded(request: Any, body: bytes) -> _Decoded | None:
    """What `BodyRequest` decoded of this very body, if it did."""
    decoded = getattr(request, "decoded", None)
    return decoded if isinstance(decoded, _Decoded) and decoded.body is body else None


class StrictBody(AbstractDTO[Any]):
    """Decodes a route's body into its request Struct in one strict msgspec pass."""

    decoders: ClassVar[dict[str, msgspec.json.Decoder[Any]]] = {}  # handler id -> decoder

    def decode_bytes(self, value: bytes) -> Any:
        connection = self.asgi_connection
        if (decoded := _decoded(connection, value)) is not None:  # a large body, in a thread
            return decoded.result()
        decoder = self.decoders[connection.route_handler.handler_id]
        return decode_body(decoder, value, worker_of(connection.app).settings)

    @classmethod
    def create_for_field_definition(
        cls, field_definition: FieldDefinition, handler_id: str, backend_cls: Any = None
    ) -> None:
        if field_definition.name == "data":
            cls.decoders[handler_id] = msgspec.json.Decoder(field_definition.annotation)

    @classmethod
    def create_openapi_schema(
        cls, field_definition: FieldDefinition, handler_id: str, schema_creator: Any
    ) -> Any:
        return schema_creator.for_field_definition(field_definition)

    @classmethod
    def is_supported_model_type_field(cls, field_definition: FieldDefinition) -> bool:
        return False  # bodies only: responses are encoded by Litestar as they are

    @classmethod
    def generate_field_definitions(
        cls, model_type: type[Any]
    ) -> Generator[DTOFieldDefinition, None, None]:
        yield from ()

    @classmethod
    def detect_nested_field(cls, field_definition: FieldDefinition) -> bool:
        return False


class StrictBodies(SerializationPlugin):
    """Every route whose `data` is a request Struct decodes it with `StrictBody`."""

    def supports_type(self, field_definition: FieldDefinition) -> bool:
        return field_definition.is_subclass_of(RequestBody)

    def create_dto_for_type(self, field_definition: FieldDefinition) -> type[AbstractDTO[Any]]:
        return StrictBody


def decoder_of(handler: BaseRouteHandler) -> msgspec.json.Decoder[Any] | None:
    """The decoder `StrictBody` uses for the body of `handler` (known once the app is built)."""
    return StrictBody.decoders.get(handler.handler_id)


def decode_body(
    decoder: msgspec.json.Decoder[Any],
    value: bytes,
    settings: Settings,
    name_surrogate: bool = True,
) -> Any:
    """`value` decoded strictly by `decoder` into its request Struct, within the batch limits:
    what every request body goes through (`StrictBody`, and the hot path of encode and count).
    `name_surrogate`: look for a lone surrogate in a body the parser rejects (a scan of every
    escape: the hot path, which hands such a body to the full path, leaves it to that one)."""
    if decoder.type is DecodeRequest and value.count(b"[") - 1 > settings.max_batch_items:
        _refuse_large_batch(value, settings.max_batch_items)
    try:
        data: RequestBody = decoder.decode(value)
    except msgspec.ValidationError as exc:
        raise ValidationException(f"invalid body: {exc}") from None
    except msgspec.DecodeError as exc:
        if name_surrogate:
            _refuse_lone_surrogates(value)
        raise ValidationException(f"malformed JSON: {exc}") from None
    except RecursionError:  # msgspec recurses once per level, up to Python's recursion limit
        raise ValidationException("malformed JSON: lists and objects nest too deeply") from None
    check_items(settings, *data.size())
    return data


async def decode_large(
    decoder: msgspec.json.Decoder[Any],
    value: bytes,
    settings: Settings,
    name_surrogate: bool = True,
) -> Any:
    """`decode_body`, in a thread (`run_work`) for a body over INLINE_DECODE_BYTES."""

    def decode(_: object) -> Any:
        return decode_body(decoder, value, settings, name_surrogate)

    return await run_work(len(value), decode, inline_bytes=INLINE_DECODE_BYTES)


class _BatchOnly(msgspec.Struct):
    """A decode body read for its `batch` alone, left undecoded (every other field skipped)."""

    batch: msgspec.Raw | None = None


_batch_only = msgspec.json.Decoder(_BatchOnly)


def _refuse_large_batch(body: bytes, limit: int) -> None:
    """A decode body with more lists than `limit` batch items: 413 if its `batch` holds them,
    counted at C speed (~1 ms per MB) before millions of lists are decoded (no string of a
    decode body may hold "["); a body whose lists cannot be a batch goes on to the decode that
    names what is wrong (a 400)."""
    try:
        batch = _batch_only.decode(body).batch
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return
    if batch is None:
        return
    raw = bytes(batch)
    if raw.count(b"]") != raw.count(b"["):
        raise ValidationException("malformed JSON: its [ and ] do not pair up")
    if b"[[[" in raw.translate(None, b" \t\r\n"):
        raise ValidationException("invalid body: lists nest deeper than a batch of ids")
    if (lists := raw.count(b"[") - 1) > limit:
        raise LimitExceededError("items per batch", limit, lists)


def _refuse_lone_surrogates(body: bytes) -> None:
    """Name the first lone surrogate escape. An escaped backslash (two of them) is blanked
    first, with as many bytes, so that every backslash left starts an escape (JSON pairs them
    from the left, as `bytes.replace` does) and the offsets stay; then a search in C. (A
    Python loop over every escape held the event loop 1.4 s on an 8 MB body of pairs.) The
    search goes chunk by chunk, each one call that holds the GIL for a few ms, not 0.36 s: a match
    must start in its chunk and may read `_SCAN_AHEAD` bytes past it (`endpos`); a lookbehind
    sees before `pos`."""
    blanked = body.replace(b"\\\\", b"__")
    for start in range(0, len(blanked), _SCAN_CHUNK):
        end = start + _SCAN_CHUNK
        found = _LONE_SURROGATE.search(blanked, start, end + _SCAN_AHEAD)
        if found is not None and found.start() < end:
            raise SurrogateError(found.start(), "byte {} of the request body")


def exactly_one(a: object, b: object, names: str) -> None:
    """A body rule the Struct cannot state: exactly one of two fields is given (400 otherwise)."""
    if (a is None) == (b is None):
        raise ValidationException(f"give exactly one of {names}")
