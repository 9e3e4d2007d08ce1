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


def _bundled_store() -> Path:
    """The store that ships with the package: inside it when installed from a wheel, the top-level
    `tokenizers_store/` in a source checkout (and an editable install)."""
    here = Path(__file__).resolve().parent
    packaged = here / "bundled_store"
    return packaged if (packaged / "manifest.json").exists() else here.parent / "tokenizers_store"


BUNDLED_STORE = _bundled_store()
BUNDLED = "bundled"  # the word that names the bundled store in TOKSVC_STORE and --store


def parse_stores(raw: str) -> tuple[Path, ...]:
    """`TOKSVC_STORE`: store folders separated by `:` (os.pathsep); `bundled` names the bundled
    store. Each store owns its names (a name in two stores is a load error naming both)."""
    parts = [part for part in raw.split(os.pathsep) if part]
    if not parts:
        raise ValueError(raw)
    return tuple(BUNDLED_STORE if part == BUNDLED else Path(part) for part in parts)


def is_bundled(store: Path) -> bool:
    return store.resolve() == BUNDLED_STORE


_POSITIVE = {
    "workers",
    "max_body_bytes",
    "max_batch_items",
    "max_ids_per_request",
    "max_stream_ids",
    "max_stream_seconds",
    "ws_idle_seconds",
    "max_streams_per_worker",
    "max_output_bytes",
    "write_seconds",
    "max_header_bytes",
    "header_seconds",
    "max_large_requests",
}


@dataclass(frozen=True, slots=True)
class Settings:
    stores: tuple[Path, ...] = (BUNDLED_STORE,)  # TOKSVC_STORE, see parse_stores
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
    # per-request and per-connection budgets (docs/reliability.md, "Budgets")
    max_output_bytes: int = 16 * 1024 * 1024  # decoded bytes one decode request may produce
    write_seconds: float = 30.0  # a client that reads nothing for this long is disconnected
    max_header_bytes: int = 64 * 1024  # request line and headers; more gets 431
    header_seconds: float = 10.0  # the request line and headers must arrive within this time
    large_request_bytes: int = 1024 * 1024  # a body over this is a "large request"
    max_large_requests: int = 2  # large requests worked on at once per worker; more get 503
    api_keys: str = ""  # "id:key,id:key": when set (or api_keys_file), the API wants a key
    api_keys_file: str = ""  # a file of "id:key" lines, read at start-up
    cors_origins: str = ""  # comma-separated origins allowed by CORS; empty: CORS off
    state_dir: str = ""  # set by `toksvc serve`: shared by its workers
    supervised: bool = False  # set by `toksvc serve` when uvicorn supervises several workers
    playground: bool = True  # /playground page (GET / redirects there), /v1/playground/* helpers
    supervisor_pid: int = 0  # set by `toksvc serve`: a worker whose parent is no longer it exits

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            env_name = "TOKSVC_STORE" if f.name == "stores" else f"TOKSVC_{f.name.upper()}"
            raw = env.get(env_name)
            if raw is None or raw == "":
                continue
            kind: type = type(f.default)
            try:
                if f.name == "stores":
                    values[f.name] = parse_stores(raw)
                else:
                    values[f.name] = _bool(raw) if kind is bool else kind(raw)
            except ValueError:
                what = "list of store folders" if f.name == "stores" else kind.__name__
                raise ConfigError(f"{env_name}={raw!r} is not a valid {what}") from None
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
