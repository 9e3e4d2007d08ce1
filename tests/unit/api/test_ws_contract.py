"""What `GuardedWebSocketProtocol` relies on in uvicorn's and websockets' internals (issue 23:
bound what the code relies on): the handlers it overrides exist and are called by uvicorn's
`handle_events` for the frames it means, and websockets can fail a connection with a code."""

from __future__ import annotations

import inspect

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import Protocol

from service.api.connection import GuardedWebSocketProtocol


def test_the_overridden_handlers_are_uvicorns() -> None:
    source = inspect.getsource(WebSocketsSansIOProtocol.handle_events)
    for name in ("handle_text", "handle_bytes", "handle_cont", "handle_ping"):
        assert name in vars(GuardedWebSocketProtocol)
        assert callable(getattr(WebSocketsSansIOProtocol, name))
        assert f"self.{name}(" in source  # called for each frame of its kind
    assert callable(WebSocketsSansIOProtocol.handle_parser_exception)
    assert "close_sent" in inspect.getsource(WebSocketsSansIOProtocol.handle_parser_exception)
    assert list(inspect.signature(Protocol.fail).parameters)[:3] == ["self", "code", "reason"]
