"""Optional API keys: who may call the API. Off by default.

Keys come from TOKSVC_API_KEYS (`id:key,id:key`) and/or the file TOKSVC_API_KEYS_FILE (one
`id:key` a line, `#` comments), read once at start-up; several may be valid at once, so a key is
rotated by adding the new one, moving clients over, then removing the old one. A request gives
its key as `Authorization: Bearer <key>` (the scheme in any case) or `X-API-Key: <key>`; it is
compared with every configured key in constant time. Without a valid key: 401 problem (a
WebSocket is refused before it opens). Logs name a key by its id, never by its value.

Open without a key: the routes that declare `traits.AUTH_EXEMPT`: the probes (`/healthz`,
`/readyz`) and `/metrics`, which the orchestrator and Prometheus call, and `/admin/reload`, which
has its own token.
"""

from __future__ import annotations

import hmac
import logging
from pathlib import Path

from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send

from service.api import problems, traits
from service.errors import ConfigError
from service.settings import Settings

log = logging.getLogger("toksvc")


def load_keys(settings: Settings) -> dict[str, bytes]:
    """key id -> key, from the setting and the file; empty: keys are off."""
    lines = [item for item in settings.api_keys.split(",") if item.strip()]
    if settings.api_keys_file:
        try:
            text = Path(settings.api_keys_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"TOKSVC_API_KEYS_FILE: cannot be read ({exc.strerror})") from None
        lines += [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    keys: dict[str, bytes] = {}
    for n, line in enumerate(lines, 1):
        key_id, sep, key = line.strip().partition(":")
        if not sep or not key_id or len(key) < 16:
            raise ConfigError(f"API key entry {n}: use id:key with a key of 16 characters or more")
        keys[key_id] = key.encode()
    return keys


def key_id_of(keys: dict[str, bytes], given: bytes) -> str | None:
    """The id of the key given, comparing with every key in constant time."""
    found = None
    for key_id, key in keys.items():
        if hmac.compare_digest(given, key):
            found = key_id
    return found


def _given_key(scope: Scope) -> bytes:
    for name, value in scope["headers"]:
        if name == b"x-api-key":
            return value.strip()
        if name == b"authorization":
            scheme, _, rest = value.strip().partition(b" ")
            if scheme.lower() == b"bearer":
                return rest.strip()
    return b""


class ApiKeys(ASGIMiddleware):
    """Every route but those declaring `traits.AUTH_EXEMPT` wants a valid key (the keys are
    read once; the middleware keeps no other state)."""

    scopes = (ScopeType.HTTP, ScopeType.WEBSOCKET)
    exclude_opt_key = traits.AUTH_EXEMPT

    def __init__(self, keys: dict[str, bytes]) -> None:
        self.keys = keys

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        key_id = key_id_of(self.keys, _given_key(scope))
        if key_id is not None:
            scope["state"]["api_key_id"] = key_id
            return await next_app(scope, receive, send)
        log.info("refused %s %s: no valid API key", scope["type"], scope["path"])
        if scope["type"] == ScopeType.WEBSOCKET:
            return await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
        detail = "a valid API key is required (Authorization: Bearer <key>)"
        await problems.send_raw(
            send, problems.for_http(401, detail), {"WWW-Authenticate": "Bearer"}
        )
