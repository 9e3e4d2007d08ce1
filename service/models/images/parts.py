"""Images in a conversation: where each one stands, its size, and what the model's rule bills.

An OpenAI content part `{"type": "image_url", "image_url": {"url", "detail"}}` may carry the
image's `width` and `height` (they win); otherwise its size is read from the header of a base64
data URL (PNG, JPEG, GIF, WebP), decoding only the few bytes the header needs wherever they lie
(`_base64_reader`), never the whole image. A URL is never fetched: without `width` and `height`
it is an ImageInputError saying to give them. Anthropic `image` blocks and Responses
`input_image` parts are read here too (`anthropic_part`, `responses_part`) and handed on as
OpenAI parts with their size, so every shape counts the same way.

The tokens come from the model profile's `images` rule (`service.models.images.rules`), are added
to the message that holds the image, and make the count an estimate (`exact: false`). A model
without a rule answers ImagesNotCountedError. Every problem names the message index and field.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import Meta, Struct

from service.bpe.deadline import checkpoint
from service.errors import ChatInputError, ImageInputError, ImagesNotCountedError
from service.models.conversation import TextPart
from service.models.counting import ChatCount
from service.models.images import headers as image_headers
from service.models.images.rules import image_tokens
from service.store.modelstore import LoadedModel

T = TypeVar("T")
Dimension = Annotated[int, Meta(ge=1, le=2**31 - 1)]
Detail = Literal["low", "high", "auto"]


class ImageURL(Struct, frozen=True, forbid_unknown_fields=True):
    url: str
    detail: Detail = "auto"


class ImagePart(Struct, frozen=True, forbid_unknown_fields=True):
    """OpenAI's image content part, plus the image's size if the caller knows it."""

    type: Literal["image_url"]
    image_url: ImageURL
    width: Dimension | None = None
    height: Dimension | None = None


@dataclass(frozen=True, slots=True)
class Image:
    index: int  # the message that holds it
    field: str  # where in that message, e.g. "content[1]"
    width: int
    height: int
    detail: str = "auto"


def split(messages: list[Any]) -> tuple[list[Any], list[Image]]:
    """The messages without their image parts (the text parts joined by newlines, as
    `check_messages` joins them, each checked here where its index is still the caller's), and
    the images."""
    out: list[Any] = []
    found: list[Image] = []
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list) or not any(_is_image(p) for p in content):
            out.append(message)
            continue
        texts = []
        for j, part in enumerate(content):
            if _is_image(part):
                found.append(_openai_image(part, i, f"content[{j}]"))
            else:
                texts.append(_convert(part, TextPart, i, f"content[{j}]", ChatInputError).text)
        out.append({**message, "content": "\n".join(texts)})
    return out, found


def add_tokens(count: ChatCount, model: LoadedModel, images: list[Image]) -> None:
    """Add each image's tokens to its message and the total; the count becomes an estimate (and
    has no token ids: an image is not text)."""
    check_counted(model, images)
    rule = model.profile.images
    if rule is None or not images:
        return
    for image in images:
        tokens = image_tokens(rule, image.width, image.height, image.detail)
        count.input_tokens += tokens
        if image.index < len(count.messages):
            held = count.messages[image.index]
            count.messages[image.index] = dataclasses.replace(held, tokens=held.tokens + tokens)
        else:  # no breakdown: the total's one figure
            count.overhead["unattributed"] = count.overhead.get("unattributed", 0) + tokens
    count.exact = False
    count.ids = None


def check_counted(model: LoadedModel, images: list[Image]) -> None:
    """ImagesNotCountedError before any rendering, when there are images and no rule."""
    if images and model.profile.images is None:
        raise ImagesNotCountedError(model.ref, images[0].index, images[0].field)


def anthropic_part(block: Mapping[str, Any], i: int, where: str) -> dict[str, Any]:
    """An Anthropic `image` block (`source`: base64, url, or file with `width` and `height` on
    the block) as a sized OpenAI part."""
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise ImageInputError(i, f"{where}.source", "must be an object (base64, url or file)")
    kind = source.get("type")
    size = block.get("width"), block.get("height")
    if kind == "base64":
        data = source.get("data")
        if not isinstance(data, str):
            raise ImageInputError(i, f"{where}.source.data", "must be a base64 string")
        image = _sized(*size, i, where, data=data, data_field=f"{where}.source.data")
        return _part(f"data:{source.get('media_type', 'image')};base64,", image)  # data read
    if kind in ("url", "file"):
        key = "url" if kind == "url" else "file_id"
        if not isinstance(source.get(key), str):
            raise ImageInputError(i, f"{where}.source.{key}", "must be a string")
        image = _sized(*size, i, where, data_field=f"{where}.source.{key}", stored=kind == "file")
        return _part(source["url"] if kind == "url" else "", image)
    raise ImageInputError(
        i,
        f"{where}.source.type",
        f"{kind!r} is not counted; give base64, or url or file with width and height",
    )


def responses_part(part: Mapping[str, Any], i: int, where: str) -> dict[str, Any]:
    """A Responses `input_image` part (`image_url` or `file_id`, `detail`) as a sized OpenAI
    part."""
    detail = part.get("detail", "auto")
    if detail not in ("low", "high", "auto"):
        raise ImageInputError(i, f"{where}.detail", "must be low, high or auto")
    size = part.get("width"), part.get("height")
    url = part.get("image_url")
    if url is None and isinstance(part.get("file_id"), str):
        image = _sized(*size, i, where, data_field=f"{where}.file_id", stored=True, detail=detail)
        return _part("", image)
    if not isinstance(url, str):
        raise ImageInputError(i, f"{where}.image_url", "must be a string (a URL or data URL)")
    image = _sized(*size, i, where, url=url, data_field=f"{where}.image_url", detail=detail)
    return _part(url[: url.find(",") + 1] if url.startswith("data:") else url, image)


def _part(url: str, image: Image) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": url, "detail": image.detail},
        "width": image.width,
        "height": image.height,
    }


def _is_image(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "image_url"


def _openai_image(raw: Any, i: int, where: str) -> Image:
    part = _convert(raw, ImagePart, i, where, ImageInputError)
    return _sized(
        part.width,
        part.height,
        i,
        where,
        url=part.image_url.url,
        data_field=f"{where}.image_url.url",
        detail=part.image_url.detail,
    )


def _convert(raw: Any, kind: type[T], i: int, where: str, error: type[ChatInputError]) -> T:
    """`raw` as `kind`, or `error` naming the field within `where`."""
    try:
        return msgspec.convert(raw, type=kind)
    except msgspec.ValidationError as exc:
        reason, sep, at = str(exc).rpartition(" - at `$")
        field = f"{where}.{at.rstrip('`').lstrip('.')}" if sep else where
        raise error(i, field.rstrip("."), reason if sep else str(exc)) from None


def _sized(
    width: Any,
    height: Any,
    i: int,
    where: str,
    *,
    data_field: str,
    data: str | None = None,
    url: str | None = None,
    stored: bool = False,
    detail: str = "auto",
) -> Image:
    """The image's size: `width` and `height` if given, else read from the base64 `data` or a
    data URL's payload (a URL or a `stored` file is never fetched)."""
    given = [(name, v) for name, v in (("width", width), ("height", height)) if v is not None]
    for name, value in given:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**31:
            raise ImageInputError(i, f"{where}.{name}", "must be a whole number of pixels >= 1")
    if len(given) == 1:
        raise ImageInputError(i, f"{where}.{given[0][0]}", "give both width and height")
    if len(given) == 2:
        return Image(i, where, width, height, detail)
    if data is None and url is not None and url.startswith("data:"):
        header, comma, data = url.partition(",")
        if not comma or not header.endswith(";base64"):
            raise ImageInputError(
                i,
                data_field,
                "is a data URL without ;base64: send the image as base64, or give width and height",
            )
    if data is None:
        what = "is a stored file" if stored else "is a URL"
        raise ImageInputError(
            i,
            data_field,
            f"{what}, never fetched: give the image's width "
            "and height with it, or send it as base64",
        )
    checkpoint()  # a JPEG's header may take 1,024 reads: thousands of them are seconds of work
    try:
        _, w, h = image_headers.size(_base64_reader(data))
    except ValueError as exc:
        raise ImageInputError(i, data_field, f"the image {exc}") from None
    return Image(i, where, w, h, detail)


def _base64_reader(text: str) -> image_headers.Read:
    """`read(offset, n)` over the bytes `text` encodes, decoding only the 4-character groups
    that hold them (every 3 bytes are 4 characters, so byte b is in characters 4*(b//3)..)."""

    def read(offset: int, n: int) -> bytes:
        first = offset // 3 * 4
        chunk = text[first : -(-(offset + n) // 3) * 4]
        if len(chunk) % 4:  # the end of an unpadded payload
            chunk += "=" * (-len(chunk) % 4)
        try:
            raw = base64.b64decode(chunk, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"is not valid base64 (near character {first})") from None
        skip = offset - first // 4 * 3
        return raw[skip : skip + n]

    return read
