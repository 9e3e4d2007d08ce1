"""Image sizes from headers written here by each format's specification (struct, no imaging
library), read with bounded work; each provider's rule checked against the worked examples its
documentation publishes (cited per test)."""

from __future__ import annotations

import base64
import math
import struct
import zlib

import pytest

from service.bpe.deadline import Deadline, within
from service.errors import ChatInputError, FormatError, ImageInputError, WorkStoppedError
from service.models.images import headers as image_headers
from service.models.images import parts as images
from service.models.images import rules as image_rules
from service.store.formats.model import (
    AnthropicImages,
    FixedImages,
    OpenAIPatchImages,
    OpenAITileImages,
    parse_model,
)
from tests.support.testdata import image_bytes

# --- headers written from the formats' specifications -------------------------------------------


def png(width: int, height: int) -> bytes:
    """A whole PNG (signature, IHDR, one IDAT of a black image's first row, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    idat = chunk(b"IDAT", zlib.compress(b"\x00" * (width + 1)))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + idat + chunk(b"IEND", b"")


def gif(width: int, height: int, version: bytes = b"89a") -> bytes:
    return b"GIF" + version + struct.pack("<HHBBB", width, height, 0, 0, 0) + b";"


def webp(chunk: bytes, payload: bytes) -> bytes:
    body = b"WEBP" + chunk + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_lossy(width: int, height: int) -> bytes:  # RFC 6386 key frame header
    return webp(b"VP8 ", b"\x30\x01\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height))


def webp_lossless(width: int, height: int) -> bytes:  # WebP lossless bitstream: 14-bit sizes - 1
    bits = (width - 1) | (height - 1) << 14
    return webp(b"VP8L", b"\x2f" + struct.pack("<I", bits))


def webp_extended(width: int, height: int) -> bytes:  # VP8X: flags, reserved, 24-bit sizes - 1
    return webp(
        b"VP8X",
        b"\x00\x00\x00\x00"
        + (width - 1).to_bytes(3, "little")
        + (height - 1).to_bytes(3, "little"),
    )


def segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def jpeg(width: int, height: int, sof: int = 0xC0, before: bytes = b"") -> bytes:
    """SOI, JFIF APP0, `before` (more segments), DQT, a fill byte, SOFn, DHT, SOS, EOI."""
    app0 = segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    dqt = segment(0xDB, b"\x00" + bytes(range(64)))
    frame = segment(sof, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
    dht = segment(0xC4, b"\x00" + b"\x01" + b"\x00" * 15 + b"\x00")
    sos = segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
    return b"\xff\xd8" + app0 + before + dqt + b"\xff" + frame + dht + sos + b"\x00\xff\xd9"


def reader(data: bytes) -> image_headers.Read:
    return lambda offset, n: data[offset : offset + n]


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (png, "png"),
        (gif, "gif"),
        (lambda w, h: gif(w, h, b"87a"), "gif"),
        (webp_lossy, "webp"),
        (webp_lossless, "webp"),
        (webp_extended, "webp"),
        (jpeg, "jpeg"),
        (lambda w, h: jpeg(w, h, 0xC2), "jpeg"),  # progressive: SOF2
        (lambda w, h: jpeg(w, h, before=segment(0xE1, b"Exif\x00\x00" + b"\x00" * 60000)), "jpeg"),
    ],
)
@pytest.mark.parametrize(("width", "height"), [(1, 1), (1024, 768), (333, 4097), (16383, 9)])
def test_each_format_gives_its_size(make, kind: str, width: int, height: int) -> None:  # type: ignore[no-untyped-def]
    data = make(width, height)
    assert image_headers.size(reader(data)) == (kind, width, height)
    b64 = base64.b64encode(data).decode()
    assert image_headers.size(images._base64_reader(b64)) == (kind, width, height)
    assert image_headers.size(images._base64_reader(b64.rstrip("="))) == (kind, width, height)


@pytest.mark.parametrize(
    "data",
    [
        png(10, 10)[:20],
        b"\xff\xd8\xff",
        gif(5, 5)[:8],
        webp_lossy(5, 5)[:24],
        b"",
        b"<svg xmlns='http://www.w3.org/2000/svg'/>",
        b"BM" + b"\x00" * 40,  # SVG, BMP
        jpeg(5, 5)[:40],
        b"\xff\xd8" + segment(0xDA, b"\x00") + b"\xff\xd9",  # no SOF before SOS
        b"\xff\xd8\xff\xe0\x00\x01",
        png(0, 10),
        gif(10, 0),  # a length below 2, zero sizes
        jpeg(0, 0),
    ],
)
def test_bad_or_cut_headers_are_value_errors(data: bytes) -> None:
    with pytest.raises(ValueError):
        image_headers.size(reader(data))


def test_a_jpeg_walks_at_most_max_segments() -> None:
    many = segment(0xFE, b"x") * (image_headers.MAX_SEGMENTS + 1)  # comments before the frame
    with pytest.raises(ValueError, match="segments"):
        image_headers.size(reader(jpeg(8, 8, before=many)))


# --- bounded: only the header's bytes are decoded -------------------------------------------------


def test_only_the_header_of_a_base64_image_is_decoded() -> None:
    """Characters that are not base64 after the header (or inside a skipped JPEG segment) would
    fail any decoding of them: the size is read all the same."""
    head = base64.b64encode(png(640, 480)[:33]).decode()  # 33 bytes: 44 characters, whole groups
    assert image_headers.size(images._base64_reader(head + "!!!!" * 2_000_000))[1:] == (640, 480)
    exif = segment(0xE1, b"Exif\x00\x00" + b"\x00" * 59_994)  # 60,004 bytes: whole groups
    data = jpeg(1920, 1080, before=exif)
    b64 = base64.b64encode(data).decode()
    start = (2 + 18 + 6) // 3 * 4 + 8  # inside the EXIF body, in characters
    poisoned = b64[:start] + "!" * 40_000 + b64[start + 40_000 :]
    assert image_headers.size(images._base64_reader(poisoned)) == ("jpeg", 1920, 1080)
    with pytest.raises(ValueError):  # the poison is real: decoding it fails
        base64.b64decode(poisoned, validate=True)


def part(url: str, **extra: object) -> dict[str, object]:
    return {"type": "image_url", "image_url": {"url": url}, **extra}


def data_url(data: bytes, kind: str = "png") -> str:
    return f"data:image/{kind};base64," + base64.b64encode(data).decode()


def test_split_takes_image_parts_out_and_keeps_the_text_in_order() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "a"},
                part(data_url(gif(300, 200), "gif")),
                {"type": "text", "text": "b"},
                {
                    **part("https://example.com/x.png", width=64, height=32),
                    "image_url": {"url": "https://example.com/x.png", "detail": "low"},
                },
            ],
        },
    ]
    out, found = images.split(messages)
    assert out[0] is messages[0]
    assert out[1]["content"] == "a\nb"  # as check_messages joins text parts
    assert found == [
        images.Image(1, "content[1]", 300, 200, "auto"),
        images.Image(1, "content[3]", 64, 32, "low"),
    ]


def test_a_bad_text_part_beside_an_image_keeps_its_own_index() -> None:
    content = [part("x", width=1, height=1), {"type": "text", "text": 5}]
    with pytest.raises(ChatInputError) as err:
        images.split([{"role": "user", "content": content}])
    assert not isinstance(err.value, ImageInputError)
    assert (err.value.index, err.value.field) == (0, "content[1].text")


@pytest.mark.parametrize(
    ("bad", "field", "words"),
    [
        (part("https://example.com/cat.png"), "content[0].image_url.url", "never fetched"),
        (part("data:image/png,rawbytes"), "content[0].image_url.url", ";base64"),
        (part(data_url(png(9, 9))[:40]), "content[0].image_url.url", "cut short"),
        (part("data:image/png;base64,@@@@####"), "content[0].image_url.url", "not valid base64"),
        (part("data:image/png;base64,ÿÿÿÿ"), "content[0].image_url.url", "not valid base64"),
        (part(data_url(b"GIF89a")), "content[0].image_url.url", "cut short"),
        (part(data_url(b"%PDF-1.7 " * 8)), "content[0].image_url.url", "not a PNG"),
        (part("x", width=5), "content[0].width", "both"),
        (part("x", width=0, height=5), "content[0].width", ">= 1"),
        (part("x", width=True, height=5), "content[0].width", "int"),
        (
            {"type": "image_url", "image_url": {"url": "x", "detail": "ultra"}},
            "content[0].image_url.detail",
            "enum",
        ),
        ({"type": "image_url"}, "content[0]", "image_url"),
    ],
)
def test_a_bad_image_part_names_its_message_and_field(bad: object, field: str, words: str) -> None:
    with pytest.raises(ImageInputError) as err:
        images.split([{"role": "user", "content": "x"}, {"role": "user", "content": [bad]}])
    assert err.value.index == 1 and err.value.field == field
    assert words in str(err.value)


# --- the rules, against the providers' own worked examples ---------------------------------------

GPT_4O = OpenAITileImages(base=85, per_tile=170)


def test_openai_tiles_match_the_guides_examples() -> None:
    """OpenAI, "Images and vision", Calculating costs: "A 1024 x 1024 square image in detail:
    high mode costs 765 tokens"; "A 2048 x 4096 image in detail: high mode costs 1105 tokens";
    "A 4096 x 8192 image in detail: low most costs 85 tokens"."""
    assert image_rules.image_tokens(GPT_4O, 1024, 1024, "high") == 170 * 4 + 85 == 765
    assert image_rules.image_tokens(GPT_4O, 2048, 4096, "high") == 170 * 6 + 85 == 1105
    assert image_rules.image_tokens(GPT_4O, 4096, 8192, "low") == 85
    assert image_rules.image_tokens(GPT_4O, 2048, 4096, "auto") == 1105  # auto counts as high


def test_small_images_are_not_scaled_up() -> None:
    """A 128x64 image measured against the API (community.openai.com thread 1262691, "Vision:
    more than one way to send a request"): gpt-4o 97 low and 267 high, gpt-4o-mini 2845 and 8512,
    each with the same 12 text tokens: one tile, so 85/255 and 2833/8500."""
    assert image_rules.image_tokens(GPT_4O, 128, 64, "high") == 267 - 12
    mini = OpenAITileImages(base=2833, per_tile=5667)
    assert image_rules.image_tokens(mini, 128, 64, "low") == 2845 - 12
    assert image_rules.image_tokens(mini, 128, 64, "high") == 8512 - 12


def test_openai_patches_match_the_guides_examples() -> None:
    """OpenAI's guide, patch rule: a 1024 x 1024 image is 32 * 32 = 1024 patches, below the cap
    of 1536; a 1800 x 2400 image is scaled by 0.603, then to 33 patches wide: 1056 x 1408, 33 *
    44 = 1452. gpt-4.1-mini multiplies by 1.62."""
    assert image_rules.patch_count(1024, 1024, 1536) == 1024
    assert image_rules.patch_count(1800, 2400, 1536) == 33 * 44 == 1452
    mini = OpenAIPatchImages(multiplier=1.62)
    assert image_rules.image_tokens(mini, 1024, 1024, "low") == math.ceil(1024 * 1.62)  # no detail
    assert image_rules.image_tokens(mini, 1800, 2400) == 2353  # 2352.24, rounded up
    assert image_rules.image_tokens(OpenAIPatchImages(multiplier=1.0), 1800, 2400) == 1452


@pytest.mark.parametrize(("width", "height"), [(1, 10**6), (10**6, 1), (40000, 30000), (33, 33)])
def test_patches_never_exceed_the_cap(width: int, height: int) -> None:
    count = image_rules.patch_count(width, height, 1536)
    assert 1 <= count <= 1536
    assert count <= math.ceil(width / 32) * math.ceil(height / 32)


def test_anthropic_matches_its_examples() -> None:
    """Anthropic, "Vision", Calculate image costs: tokens = (width px * height px)/750;
    200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590; and its table of the largest sizes that are
    not resized: 1092x1092, 951x1268, 896x1344, 819x1456, 784x1568."""
    rule = AnthropicImages()
    assert [image_rules.image_tokens(rule, s, s) for s in (200, 1000, 1092)] == [54, 1334, 1590]
    for w, h in [(1092, 1092), (951, 1268), (896, 1344), (819, 1456), (784, 1568)]:
        assert image_rules.anthropic_size(rule, w, h) == (w, h)
        assert image_rules.anthropic_size(rule, h, w) == (h, w)


@pytest.mark.parametrize(("width", "height"), [(4000, 3000), (1569, 100), (1200, 1200), (9, 9000)])
def test_anthropic_scales_big_images_down_keeping_their_shape(width: int, height: int) -> None:
    rule = AnthropicImages()
    w, h = image_rules.anthropic_size(rule, width, height)
    assert max(w, h) <= 1568 and w * h <= 1568 * 784 and (w, h) != (width, height)
    assert abs(w / h - width / height) <= 1 / min(w, h) * (width / height) + 1e-9
    assert image_rules.image_tokens(rule, width, height) == math.ceil(w * h / 750)


def test_a_fixed_rule_ignores_size_and_detail() -> None:
    rule = FixedImages(tokens=260)
    assert {
        image_rules.image_tokens(rule, w, h, d) for w, h, d in [(1, 1, "low"), (4000, 3000, "high")]
    } == {260}


def test_a_template_model_takes_only_a_fixed_rule() -> None:
    head = (
        b'{"format": "toksvc-model", "name": "m", "version": "1", "tokenizer": "t@1", '
        b'"context_window": 8, "max_output_tokens": 8, "chat": {"type": "jinja", '
        b'"template": "{{ messages }}"}, "images": '
    )
    assert isinstance(
        parse_model(head + b'{"rule": "fixed", "tokens": 256}}', "m").images, FixedImages
    )
    with pytest.raises(FormatError, match="only a fixed rule"):
        parse_model(head + b'{"rule": "openai-tiles"}}', "m")
    with pytest.raises(FormatError, match="valid model profile"):
        parse_model(head + b'{"rule": "fixed"}}', "m")  # tokens is required


def test_the_largest_declared_sizes_stay_within_each_rules_caps() -> None:
    """A PNG may declare 2^31-1 pixels a side: every rule scales it down to its caps."""
    side = 2**31 - 1
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr  # the header alone
    data = base64.b64encode(head).decode()
    assert image_headers.size(images._base64_reader(data)) == ("png", side, side)
    assert image_rules.image_tokens(GPT_4O, side, side, "high") == 85 + 4 * 170  # 768 x 768
    assert image_rules.image_tokens(OpenAIPatchImages(multiplier=1.0), side, side) <= 1536
    assert image_rules.image_tokens(AnthropicImages(), side, 1) == math.ceil(1568 * 1 / 750)
    assert image_rules.image_tokens(AnthropicImages(), side, side) <= math.ceil(1229312 / 750)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("python.png", "png"),
        ("python.gif", "gif"),
        ("python.jpg", "jpeg"),
        ("python_raw.jpg", "jpeg"),
        ("python.webp", "webp"),
    ],
)
def test_real_files_give_the_size_file_reports(name: str, kind: str) -> None:
    """CPython's test images (tests/data/README.md): 16 x 16 each, as `file` reports them."""
    data = image_bytes(name)
    assert image_headers.size(reader(data)) == (kind, 16, 16)
    encoded = base64.b64encode(data).decode()
    assert image_headers.size(images._base64_reader(encoded)) == (kind, 16, 16)


def test_reading_image_headers_stops_with_its_work() -> None:
    """A JPEG may take 1,024 reads to reach its frame header; 5,000 of them in one request are
    seconds of work, which ran on after the client had gone. Each image's read checks the work's
    deadline: a stopped work reads no further (and work that is not stopped reads them all)."""
    frame = b"\xc0\x00\x11\x08" + struct.pack(">HH", 300, 200) + b"\x03"  # height, width
    jpeg = b"\xff\xd8" + b"\xff" * 1020 + frame
    url = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()
    part = {"type": "image_url", "image_url": {"url": url}}
    messages = [{"role": "user", "content": [part] * 3}]
    _, found = images.split(messages)
    assert [(i.width, i.height) for i in found] == [(200, 300)] * 3
    stopped = Deadline()
    stopped.stop()
    with within(stopped), pytest.raises(WorkStoppedError):
        images.split(messages)
