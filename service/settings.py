"""Settings, read once from the environment (prefix TOKSVC_) and passed down.

`Settings` is a frozen msgspec Struct: each field's type and bounds are declared beside it, and
`from_env` hands the raw TOKSVC_* strings to `msgspec.convert(..., strict=False)`, which parses
and checks them; a value that does not fit is one `ConfigError` line naming the variable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from service.errors import ConfigError


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


Count = Annotated[int, Meta(ge=0)]
Positive = Annotated[int, Meta(ge=1)]
YEAR = 365 * 24 * 3600.0  # a finite cap: every deadline must end (and `inf` cannot be handed on)
Seconds = Annotated[float, Meta(ge=0, le=YEAR)]
AtLeastASecond = Annotated[float, Meta(ge=1, le=YEAR)]
Port = Annotated[int, Meta(ge=0, le=65535)]
Engine = Literal["auto", "python"]  # auto: the native engine (C) if built; python: the reference
LogLevel = Literal["debug", "info", "warning", "error"]
LogFormat = Literal["text", "json"]


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    stores: tuple[Path, ...] = (BUNDLED_STORE,)  # TOKSVC_STORE, see parse_stores
    host: str = "127.0.0.1"
    port: Port = 8000
    workers: Positive = 1
    engine: Engine = "auto"
    piece_cache_size: Count = 65536  # encoded pieces kept per tokenizer by the Python engine (LRU)
    text_cache_bytes: Count = 64 * 1024 * 1024  # whole texts -> ids, shared by all tokenizers
    piece_cache_bytes: Count = 0  # merged pieces -> ids, native engine, per process (0: off)
    hot_piece_bytes: Count = 640 * 1024  # hot pieces -> ids, native engine, per tokenizer (0: off)
    # request limits, enforced before any work is done
    max_body_bytes: Positive = 8 * 1024 * 1024
    max_batch_items: Positive = 1024
    max_ids_per_request: Positive = 1_000_000
    max_stream_ids: Positive = 1_000_000
    max_stream_seconds: AtLeastASecond = 600.0
    ws_idle_seconds: AtLeastASecond = 60.0
    body_seconds: Seconds = 30.0  # a JSON request body must arrive within this time
    max_streams_per_worker: Positive = 256
    max_stop_strings: Positive = 16  # stop strings per stream
    max_stop_chars: Positive = 256  # characters per stop string
    max_prompt_ids: Positive = 64  # prompt ids a stream is primed with
    max_stream_message_bytes: Positive = 1024 * 1024  # one NDJSON line or WebSocket message
    strict: bool = False  # a store file that fails to load stops the worker (exit non-zero)
    # start-up checks hashes and heads; each tokenizer is built when first used (off: all at once)
    build_on_first_use: bool = True
    # built before the worker turns ready, and before a reload swaps in: "all" or "name,model,..."
    preload: str = ""
    admin_token: str = ""  # non-empty: POST /admin/reload is on and wants this bearer token
    # per-request and per-connection budgets (docs/reliability.md, "Budgets")
    max_output_bytes: Positive = 16 * 1024 * 1024  # decoded bytes one decode request may produce
    write_seconds: AtLeastASecond = 30.0  # a client that reads nothing this long is disconnected
    max_header_bytes: Positive = 64 * 1024  # request line and headers; more gets 431
    header_seconds: AtLeastASecond = 10.0  # the request line and headers must arrive in this time
    large_request_bytes: Count = 1024 * 1024  # a body over this is a "large request"
    max_large_requests: Positive = 2  # large requests worked on at once per worker; more get 503
    max_work_seconds: AtLeastASecond = 30.0  # one request's CPU work (chunk, chat count, train)
    api_keys: str = ""  # "id:key,id:key": when set (or api_keys_file), the API wants a key
    api_keys_file: str = ""  # a file of "id:key" lines, read at start-up
    cors_origins: str = ""  # comma-separated origins allowed by CORS; empty: CORS off
    playground: bool = True  # /playground page (GET / redirects there), /v1/playground/* helpers
    access_log: bool = True  # one line per HTTP request on stdout (service.api.access_log)
    log_level: LogLevel = "info"  # the service's and uvicorn's logs; access lines are `info`
    log_format: LogFormat = "text"  # access lines as text or as one JSON object each

    def stream_message_bytes(self) -> int:
        """The largest NDJSON line or WebSocket message: never more than a request body."""
        return min(self.max_stream_message_bytes, self.max_body_bytes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        raw: dict[str, Any] = {}
        for name in cls.__struct_fields__:
            value = env.get(env_name(name))
            if value is None or value == "":
                continue
            if name in _BOOLS:
                value = _BOOL_WORDS.get(value.lower(), value)
            raw[name] = value.lower() if name in _WORDS else value
        if "stores" in raw:
            try:
                raw["stores"] = [str(p) for p in parse_stores(raw["stores"])]
            except ValueError:
                what = f"TOKSVC_STORE={env['TOKSVC_STORE']!r}"
                raise ConfigError(f"{what} is not a valid list of store folders") from None
        try:
            return msgspec.convert(raw, cls, strict=False, dec_hook=path_hook)
        except msgspec.ValidationError as exc:
            raise _config_error(exc, env) from None


def env_name(field: str) -> str:
    """The environment variable a field is read from."""
    return "TOKSVC_STORE" if field == "stores" else f"TOKSVC_{field.upper()}"


_BOOLS = {f.name for f in msgspec.structs.fields(Settings) if f.type is bool}
_WORDS = {"log_level", "log_format"}  # taken in any case: INFO, JSON
_BOOL_WORDS = {"yes": "true", "on": "true", "no": "false", "off": "false"}
_AT_FIELD = re.compile(r"^(?P<why>.*) - at `\$\.(?P<field>\w+)")


def path_hook(kind: type, value: Any) -> Any:
    """msgspec's dec_hook for the store folders (msgspec has no Path type of its own)."""
    if kind is Path and isinstance(value, str):
        return Path(value)
    raise NotImplementedError


def _config_error(exc: msgspec.ValidationError, env: Mapping[str, str]) -> ConfigError:
    """msgspec's "Expected `int` >= 1, got `0` - at `$.workers`" as one line about the variable."""
    found = _AT_FIELD.match(str(exc))
    if found is None:
        return ConfigError(f"settings: {exc}")
    name = env_name(found["field"])
    why = found["why"][:1].lower() + found["why"][1:]
    return ConfigError(f"{name}={env.get(name, '')!r} is not valid: {why}")
