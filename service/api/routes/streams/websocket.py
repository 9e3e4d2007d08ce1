"""Streaming decode over a WebSocket: a message `{"ids": [...]}` gets a message `{"text": ...}`.

The socket is accepted first, so that every error reaches the client as a message
`{"error": <problem>}` followed by a close code: 1007 for a message that is not a chunk request,
1013 (try again later) when the worker has no stream slot free, 1008 for any other error (an
unknown tokenizer or model, a limit, the idle time or the stream's deadline passed). `final`
closes with 1000, a stopping worker with 1001. The sequence itself is the `StreamSession`'s.
Only an invalid query parameter is refused before the socket is accepted: a 400 problem
document as the handshake's answer (ASGI's WebSocket denial response), not a bare 403.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import WebSocket, websocket
from litestar.exceptions import WebSocketDisconnect
from litestar.params import FromPath, FromQuery

from service.api import problems
from service.api.dependencies import WorkerDep, ready
from service.api.routes.streams.session import GONE, Failure, Received, StreamSession
from service.api.traits import STREAMING
from service.api.wire.info import ProblemResponse
from service.api.wire.tokens import ErrorsMode
from service.errors import ToksvcError, TooManyStreamsError

NORMAL, GOING_AWAY, INVALID_DATA, POLICY, TRY_LATER = 1000, 1001, 1007, 1008, 1013


@websocket(
    "/v1/tokenizers/{ref:str}/decode/ws", opt={"operation": "decode_stream", STREAMING: True}
)
async def decode_ws(
    socket: WebSocket[Any, Any, Any],
    ref: FromPath[str],
    worker: WorkerDep,
    *,
    errors: FromQuery[str] = "replace",
    usage: FromQuery[str] = "false",
    model: FromQuery[str | None] = None,
) -> None:
    """Messages `{"ids": [...]}` get `{"text": ...}`; `{"final": true}` flushes and closes.
    Query parameter `errors`: replace (default) or strict. Idle sockets are closed."""
    mode, metered = _ERRORS.get(errors), _BOOLS.get(usage.lower())
    if mode is None or metered is None:
        key, value = ("errors", errors) if mode is None else ("usage", usage)
        expected = "`strict` or `replace`" if mode is None else "`true` or `false`"
        detail = f"query parameter {key} must be {expected}"
        await _deny(
            socket,
            problems.for_http(
                400,
                detail,
                errors=[{"message": detail, "key": key, "source": "query", "value": value[:50]}],
            ),
        )
        return
    await socket.accept()
    transport = SocketTransport(socket)
    try:
        tokenizer = await ready(worker.serving().tokenizer_for(ref))
        session = StreamSession(
            worker,
            tokenizer,
            "websocket",
            errors=mode,
            usage=metered,
            model=model,
            idle_seconds=worker.settings.ws_idle_seconds,
        )
        await session.run(transport)
    except (WebSocketDisconnect, OSError):  # gone, or cut off by the write deadline
        return
    except ToksvcError as exc:  # before the stream started
        await transport.fail([], Failure.of(exc))


_ERRORS: dict[str, ErrorsMode] = {"strict": "strict", "replace": "replace"}
_BOOLS = {"true": True, "1": True, "false": False, "0": False}


async def _deny(socket: WebSocket[Any, Any, Any], problem: ProblemResponse) -> None:
    """Answer the handshake with a problem document instead of accepting the socket."""
    body = problems.encode(problem)
    await socket.send(
        {
            "type": "websocket.http.response.start",
            "status": problem.status,
            "headers": [
                (b"content-type", problems.PROBLEM_JSON.encode()),
                (b"content-length", b"%d" % len(body)),
            ],
        }
    )
    await socket.send({"type": "websocket.http.response.body", "body": body, "more_body": False})


def close_code(error: Exception) -> int:
    if isinstance(error, msgspec.MsgspecError):
        return INVALID_DATA
    if isinstance(error, TooManyStreamsError):
        return TRY_LATER
    return POLICY


class SocketTransport:
    """One chunk request per text message in; one answer per message out."""

    def __init__(self, socket: WebSocket[Any, Any, Any]) -> None:
        self.socket = socket

    async def open(self) -> None:
        """Nothing to do: the socket was accepted before the session was created."""

    async def receive(self) -> Received:
        try:
            return Received([await self.socket.receive_data("text")])
        except WebSocketDisconnect:
            return GONE

    async def send(self, lines: list[bytes]) -> None:
        for line in lines:
            await self.socket.send_data(line.decode())

    async def close(self, lines: list[bytes], *, stopping: bool) -> None:
        await self.send(lines)
        if stopping:
            await self.socket.close(GOING_AWAY, "server shutting down")
        else:
            await self.socket.close(NORMAL)

    async def fail(self, lines: list[bytes], failure: Failure) -> None:
        await self.send([*lines, failure.line])
        await self.socket.close(close_code(failure.error), failure.kind[:100])
