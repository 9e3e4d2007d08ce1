"""CORS (off unless TOKSVC_CORS_ORIGINS lists origins): Litestar's `CORSConfig`, and a refused
preflight answered as a problem document like every other error.

Litestar's CORS middleware answers a preflight it refuses itself, before any handler, with a
`text/plain` 400 ("Disallowed CORS Origin"). `refusals_as_problems` wraps the application's ASGI
handler (`Litestar.asgi_handler`, which holds that middleware) so that this answer becomes a 400
problem naming what was refused; tests/integration/test_access.py pins the contract.
"""

from __future__ import annotations

from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from service.api import problems
from service.settings import Settings


def config(settings: Settings) -> CORSConfig | None:
    """CORS for the listed origins only (TOKSVC_CORS_ORIGINS); off by default."""
    origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
    if not origins:
        return None
    return CORSConfig(
        allow_origins=origins,
        allow_methods=["GET", "POST"],
        allow_headers=["authorization", "content-type", "x-api-key"],
    )


def refusals_as_problems(app: Litestar) -> Litestar:
    if app.cors_config is not None:
        app.asgi_handler = PreflightProblems(app.asgi_handler)
    return app


class PreflightProblems:
    """A refused preflight (an OPTIONS request with an Origin, answered 400) as a problem."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope["method"] != "OPTIONS":
            return await self.app(scope, receive, send)
        refused = False

        async def answer(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 400:
                refused = True  # the body says what: "Disallowed CORS Origin, headers"
                return
            if refused and message["type"] == "http.response.body":
                what = bytes(message.get("body", b"")).decode(errors="replace")
                what = what.removeprefix("Disallowed CORS ").lower() or "request"
                detail = f"this CORS preflight is refused: its {what} is not allowed"
                await problems.send_raw(send, problems.for_http(400, detail))
                return
            await send(message)

        await self.app(scope, receive, answer)
