"""The uvicorn and Litestar internals the HTTP edges rely on are still there (each fix that uses
one is tested over real HTTP too; these fail first, and name the internal, after an upgrade)."""

from __future__ import annotations

import inspect

from litestar import Litestar
from litestar.middleware._internal.cors import CORSMiddleware
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from service.api.app import create_app
from service.settings import Settings


def test_lingering_close_hooks_exist_in_uvicorn() -> None:
    # service.api.connection: after the response, `cycle.more_body` says the body has not ended
    for name in ("on_response_complete", "_unset_keepalive_if_required", "data_received"):
        assert callable(getattr(HttpToolsProtocol, name)), name
    assert "self.more_body = True" in inspect.getsource(RequestResponseCycle.__init__)
    assert "self.cycle.more_body = False" in inspect.getsource(
        HttpToolsProtocol.on_message_complete
    )
    assert "self.on_response()" in inspect.getsource(RequestResponseCycle.send)


def test_websocket_denial_response_is_offered() -> None:
    # service.api.routes.streams.websocket answers a bad query with websocket.http.response.start
    assert '"websocket.http.response"' in inspect.getsource(WebSocketsSansIOProtocol)


def test_cors_middleware_is_the_app_asgi_handler() -> None:
    # service.api.access_log, service.api.head_requests and service.api.cors wrap
    # `Litestar.asgi_handler`, which holds Litestar's CORS middleware
    assert "asgi_handler" in Litestar.__slots__
    app = create_app(Settings(cors_origins="https://app.example"), hot_path=False)
    wrappers = [app.asgi_handler]
    while not isinstance(wrappers[-1], CORSMiddleware) and hasattr(wrappers[-1], "app"):
        wrappers.append(wrappers[-1].app)
    assert isinstance(wrappers[-1], CORSMiddleware)
    assert len(wrappers) == 4  # the access log, HEAD as GET, refused preflights as problems
    assert "Disallowed CORS" in inspect.getsource(CORSMiddleware)
