"""Width and height from the first bytes of a PNG, JPEG, GIF or WebP file, with bounded work.

`size(read)` asks `read(offset, n)` for the bytes it needs (exactly `n`, or fewer at the end of
the file): a few dozen bytes for PNG, GIF and WebP; for JPEG, the two-byte length of each marker
segment before the frame header (SOF0..SOF15), skipped without reading its body, at most
`MAX_SEGMENTS` of them. So an image of any length costs a few reads. A problem is a ValueError
with a reason a person can act on.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

Read = Callable[[int, int], bytes]

MAX_SEGMENTS = 1024  # JPEG marker segments walked before the frame header (real files: < 20)
PNG = b"\x89PNG\r\n\x1a\n"
# SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC), which share the C0..CF range
SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # TEM, RST0..7: no length follows


def size(read: Read) -> tuple[str, int, int]:
    """(format, width, height) of the image whose bytes `read` gives."""
    head = read(0, 30)
    if head.startswith(PNG):
        return "png", *_png(head)
    if head[:2] == b"\xff\xd8":
        return "jpeg", *_jpeg(read)
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif", *_checked(*struct.unpack_from("<HH", _need(head, 10), 6))
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp", *_webp(head)
    raise ValueError("is not a PNG, JPEG, GIF or WebP image (its first bytes say otherwise)")


def _need(data: bytes, n: int) -> bytes:
    if len(data) < n:
        raise ValueError(f"is cut short: its header needs {n} bytes, the image has {len(data)}")
    return data


def _checked(width: int, height: int) -> tuple[int, int]:
    if width < 1 or height < 1:
        raise ValueError(f"declares a size of {width}x{height} pixels; both must be at least 1")
    return width, height


def _png(head: bytes) -> tuple[int, int]:
    _need(head, 24)
    if head[12:16] != b"IHDR":
        raise ValueError("is a PNG whose first chunk is not IHDR")
    width, height = struct.unpack_from(">II", head, 16)
    if width > 2**31 - 1 or height > 2**31 - 1:
        raise ValueError("is a PNG with a size beyond the format's 2^31-1 pixels")
    return _checked(width, height)


def _webp(head: bytes) -> tuple[int, int]:
    chunk = _need(head, 16)[12:16]
    if chunk == b"VP8 ":  # lossy: a key frame's start code, then 14-bit sizes
        _need(head, 30)
        if head[23:26] != b"\x9d\x01\x2a":
            raise ValueError("is a lossy WebP without a key frame start code")
        width, height = struct.unpack_from("<HH", head, 26)
        return _checked(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L":  # lossless: a signature byte, then 14-bit sizes minus one
        _need(head, 25)
        if head[20] != 0x2F:
            raise ValueError("is a lossless WebP without its 0x2f signature")
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: the canvas size, 24-bit sizes minus one
        _need(head, 30)
        width = int.from_bytes(head[24:27], "little") + 1
        return width, int.from_bytes(head[27:30], "little") + 1
    raise ValueError(f"is a WebP whose first chunk {chunk!r} is not VP8, VP8L or VP8X")


def _jpeg(read: Read) -> tuple[int, int]:
    offset = 2
    for _ in range(MAX_SEGMENTS):
        marker = _need(read(offset, 2), 2)
        if marker[0] != 0xFF:
            raise ValueError(f"is a JPEG with no marker at byte {offset}")
        kind = marker[1]
        if kind == 0xFF:  # a fill byte before the marker
            offset += 1
            continue
        if kind in STANDALONE:
            offset += 2
            continue
        if kind in (0xD9, 0xDA):  # end of image, or the scan: no frame header came first
            raise ValueError("is a JPEG with no frame header (SOF) before its scan")
        if kind in SOF:
            frame = _need(read(offset + 2, 7), 7)
            height, width = struct.unpack_from(">HH", frame, 3)
            if height == 0:
                raise ValueError("is a JPEG whose height is set later (DNL): give width, height")
            return _checked(width, height)
        (length,) = struct.unpack(">H", _need(read(offset + 2, 2), 2))
        if length < 2:
            raise ValueError(f"is a JPEG with a segment length of {length} at byte {offset}")
        offset += 2 + length
    raise ValueError(f"is a JPEG with more than {MAX_SEGMENTS} segments before its frame header")
