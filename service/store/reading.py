"""The one gate for store reads: regular files inside the store only, a size cap, and the sha256
computed while reading, before anything is parsed. Tokenizer files, model and price files and the
manifest itself all come through here.

The file is opened with O_NONBLOCK and checked with fstat before a byte is read, so a FIFO (or a
device) is refused at once instead of waiting for a writer; its size is checked before reading,
so a huge (or sparse) file costs nothing; and reading stops at the cap if the file grows.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from service.errors import HashMismatchError, StoreError

MAX_FILE_BYTES = 256 * 1024 * 1024  # the largest tokenizer file a store may hold
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_CHUNK = 1024 * 1024


def read_bounded(store_root: Path, relative_path: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file inside `store_root`, at most `max_bytes` of them."""
    data, _ = _read(store_root, relative_path, max_bytes)
    return data


def read_hashed(store_root: Path, relative_path: str, max_bytes: int) -> tuple[bytes, str]:
    """The bytes of a regular file inside `store_root` (at most `max_bytes`) and their sha256."""
    return _read(store_root, relative_path, max_bytes)


def read_verified(
    store_root: Path, relative_path: str, expected_sha256: str, max_bytes: int = MAX_FILE_BYTES
) -> bytes:
    """The bytes of a regular file inside `store_root` whose sha256 is `expected_sha256`."""
    data, actual = _read(store_root, relative_path, max_bytes)
    if actual != expected_sha256:
        raise HashMismatchError(str(store_root / relative_path), expected_sha256, actual)
    return data


def _read(store_root: Path, relative_path: str, max_bytes: int) -> tuple[bytes, str]:
    path = store_root / relative_path
    where = str(path)
    try:
        root = store_root.resolve(strict=True)
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # missing, or a symlink loop
        reason = getattr(exc, "strerror", None) or str(exc)
        raise StoreError(where, f"cannot be read ({reason})") from None
    if not real.is_relative_to(root):
        raise StoreError(where, f"resolves to {real}, outside the store {root}")
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise StoreError(where, f"cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(where, "is not a regular file")
        if info.st_size > max_bytes:
            raise StoreError(where, f"is {info.st_size} bytes, over the limit of {max_bytes}")
        digest = hashlib.sha256()
        buffer = bytearray()
        while chunk := f.read(_CHUNK):
            if len(buffer) + len(chunk) > max_bytes:  # grew while being read
                raise StoreError(where, f"is over the limit of {max_bytes} bytes")
            digest.update(chunk)
            buffer += chunk
    return bytes(buffer), digest.hexdigest()
