"""Settings, read once from the environment (prefix TOKSVC_) and passed down."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from service.errors import ConfigError


def _bool(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


BUNDLED_STORE = Path(__file__).resolve().parent.parent / "tokenizers_store"
_POSITIVE = {
    "workers",
    "max_body_bytes",
    "max_batch_items",
    "max_ids_per_request",
    "max_stream_ids",
    "max_stream_seconds",
    "ws_idle_seconds",
    "max_streams_per_worker",
}


@dataclass(frozen=True, slots=True)
class Settings:
    store: Path = BUNDLED_STORE
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    engine: str = "auto"  # auto: the native engine (C) if built, else the reference; python: ref.
    piece_cache_size: int = 65536  # encoded pieces kept per tokenizer by the Python engine (LRU)
    text_cache_bytes: int = 64 * 1024 * 1024  # whole texts -> ids, shared by all tokenizers
    # request limits, enforced before any work is done
    max_body_bytes: int = 8 * 1024 * 1024
    max_batch_items: int = 1024
    max_ids_per_request: int = 1_000_000
    max_stream_ids: int = 1_000_000
    max_stream_seconds: float = 600.0
    ws_idle_seconds: float = 60.0
    body_seconds: float = 30.0  # a JSON request body must arrive within this time
    max_streams_per_worker: int = 256
    strict: bool = False  # a store file that fails to load stops the worker (exit non-zero)
    admin_token: str = ""  # non-empty: POST /admin/reload is on and wants this bearer token
    state_dir: str = ""  # set by `toksvc serve`: shared by its workers
    supervised: bool = False  # set by `toksvc serve` when uvicorn supervises several workers

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            raw = env.get(f"TOKSVC_{f.name.upper()}")
            if raw is None or raw == "":
                continue
            kind: type = Path if f.name == "store" else type(f.default)
            try:
                values[f.name] = _bool(raw) if kind is bool else kind(raw)
            except ValueError:
                raise ConfigError(
                    f"TOKSVC_{f.name.upper()}={raw!r} is not a valid {kind.__name__}"
                ) from None
        settings = cls(**values)  # type: ignore[arg-type]
        if settings.engine not in ("auto", "python"):
            raise ConfigError(f"TOKSVC_ENGINE={settings.engine!r}: use auto or python")
        for name, value in values.items():
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and value < (1 if name in _POSITIVE else 0)
            ):
                raise ConfigError(f"TOKSVC_{name.upper()}={value} is out of range")
        return settings
