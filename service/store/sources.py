"""The source files of an import: reading them (every failure a `StoreError` naming the file) and
the note of their hashes a tokenizer file keeps in `metadata.source`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from service.errors import StoreError
from service.store.manifest import sha256_hex


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def read_source(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StoreError(str(path), f"cannot be read ({exc.strerror})") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_source(path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreError(str(path), f"is not valid JSON: {exc}") from None


def source_note(*paths: Path) -> str:
    return "; ".join(f"{p.name} sha256:{sha256_hex(read_source(p))}" for p in paths)
