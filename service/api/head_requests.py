"""HEAD on every GET route (RFC 9110, section 9.3.2): load balancers probe with it.

`answered_as_get` wraps the application's ASGI handler (`Litestar.asgi_handler`): a HEAD request
is routed and handled as the GET it stands for, and its answer keeps the GET's status and
headers (Content-Length included) without the body. On a route without GET it is what a GET would
be: 405 (or 404 for no route), as a problem document without its body.
"""

from __future__ import annotations

from litestar import Litestar
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send


def answered_as_get(app: Litestar) -> Litestar:
    app.asgi_handler = HeadAsGet(app.asgi_handler)
    return app


class HeadAsGet:
    """HEAD as GET, the body dropped from the answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope["method"] != "HEAD":
            return await self.app(scope, receive, send)

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {
                    "type": "http.response.body",
                    "body": b"",
                    "more_body": message.get("more_body", False),
                }
            await send(message)

        # a copy: the server's own scope stays HEAD, so it sends no body either
        await self.app({**scope, "method": "GET"}, receive, without_body)
