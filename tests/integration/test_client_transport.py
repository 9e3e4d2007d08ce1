"""The client against servers that misbehave, on 127.0.0.1: one that is down, one that answers
something other than the service's JSON, one that never answers or trickles its answer, one that
is busy (503/429 with `Retry-After`). Each ends in a typed error or a bounded retry, never a hung
client. The misbehaving servers are small socket servers written here (the real service does
none of this on purpose)."""

from __future__ import annotations

import asyncio
import socketserver
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from toksvc_client import AsyncClient, Client, RetryPolicy, errors
from toksvc_client.transport import retry_after_seconds

from tests.support.server import free_port

Script = Callable[["Stub", socketserver.BaseRequestHandler, int], None]
FAST = RetryPolicy(attempts=3, backoff=0.01, max_backoff=0.05, max_retry_after=5)


class Stub:
    """A socket server on 127.0.0.1 that reads each request whole and answers by `script`
    (given the stub, the connection's handler and the request's number, from 1)."""

    def __init__(self, script: Script) -> None:
        self.requests = 0
        self.stopping = threading.Event()
        stub = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data = b""
                while True:  # keep-alive: one request after another on this connection
                    while b"\r\n\r\n" not in data:
                        more = self.request.recv(65536)
                        if not more:
                            return
                        data += more
                    head, _, data = data.partition(b"\r\n\r\n")
                    length = next(
                        (
                            int(line.split(b":")[1])
                            for line in head.split(b"\r\n")
                            if line.lower().startswith(b"content-length:")
                        ),
                        0,
                    )
                    while len(data) < length:
                        data += self.request.recv(65536)
                    data = data[length:]
                    stub.requests += 1
                    script(stub, self, stub.requests)

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def answer(status: int, body: bytes, content_type: str, **headers: str) -> bytes:
    extra = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
    return (
        f"HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\n"
        f"content-length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def problem(kind: str, status: int) -> bytes:
    return b'{"type": "/problems/%s", "title": "t", "status": %d, "detail": "d", "limit": 4}' % (
        kind.encode(),
        status,
    )


@pytest.fixture
def stub() -> Iterator[Callable[[Script], Stub]]:
    made: list[Stub] = []

    def make(script: Script) -> Stub:
        made.append(Stub(script))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_a_server_that_is_down_is_a_typed_error_after_bounded_retries() -> None:
    client = Client(f"http://127.0.0.1:{free_port()}", retry=FAST)
    with client, pytest.raises(errors.ConnectFailedError):
        client.models()

    async def main() -> None:
        async with AsyncClient(f"http://127.0.0.1:{free_port()}", retry=FAST) as client:
            with pytest.raises(errors.ConnectFailedError):
                await client.encoding("cl100k_base")

    asyncio.run(main())


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [
        (200, b"<html>hello</html>", "text/html"),
        (502, b"<html>Bad gateway</html>", "text/html"),
        (200, b'{"models": "not a list"}', "application/json"),
        (404, b'["not", "a", "problem"]', "application/json"),
    ],
)
def test_an_answer_that_is_not_the_services_json(
    stub: Callable[[Script], Stub], status: int, body: bytes, content_type: str
) -> None:
    server = stub(lambda s, h, n: h.request.sendall(answer(status, body, content_type)))
    with Client(server.base, retry=FAST) as client, pytest.raises(errors.BadResponseError) as bad:
        client.models()
    assert bad.value.status == status and bad.value.content_type == content_type
    assert bad.value.excerpt == body.decode()


def test_a_server_that_never_answers_or_trickles_times_out(stub: Callable[[Script], Stub]) -> None:
    def silent(stub: Stub, handler: socketserver.BaseRequestHandler, n: int) -> None:
        stub.stopping.wait(30)

    def trickle(stub: Stub, handler: socketserver.BaseRequestHandler, n: int) -> None:
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n"
        handler.request.sendall(head)
        while not stub.stopping.wait(0.05):  # a byte well within each read's timeout
            handler.request.sendall(b" ")

    for script in (silent, trickle):
        server = stub(script)
        client = Client(server.base, timeout=0.5, retry=FAST)
        with client, pytest.raises(errors.TransportTimeoutError):
            client.models()
        assert server.requests == 1  # a timeout is not retried

    server = stub(silent)

    async def main() -> None:
        async with AsyncClient(server.base, timeout=0.5, retry=FAST) as client:
            with pytest.raises(TimeoutError):  # TransportTimeoutError is one
                await client.models()

    asyncio.run(main())


def test_busy_answers_are_retried_as_retry_after_says(stub: Callable[[Script], Stub]) -> None:
    def busy_twice(stub: Stub, handler: socketserver.BaseRequestHandler, n: int) -> None:
        if n <= 2:
            busy = problem("too-many-streams", 503)
            handler.request.sendall(answer(503, busy, "application/problem+json", retry_after="0"))
        else:
            handler.request.sendall(answer(200, b'{"models": []}', "application/json"))

    server = stub(busy_twice)
    with Client(server.base, retry=FAST) as client:
        assert client.models() == []
    assert server.requests == 3

    server = stub(busy_twice)
    client = Client(server.base, retry=RetryPolicy(attempts=2, backoff=0.01))
    with client, pytest.raises(errors.TooManyStreamsError) as caught:
        client.models()
    assert server.requests == 2 and caught.value.retry_after == 0 and caught.value.limit == 4

    def too_long(stub: Stub, handler: socketserver.BaseRequestHandler, n: int) -> None:
        handler.request.sendall(
            answer(
                429,
                b'{"type": "/problems/rate-limited", "status": 429}',
                "application/problem+json",
                retry_after="120",
            )
        )

    server = stub(too_long)
    client = Client(server.base, retry=FAST)
    with client, pytest.raises(errors.UnavailableError) as caught_429:
        client.models()
    assert server.requests == 1  # longer than the client waits: raised at once, with the wait
    assert caught_429.value.retry_after == 120 and caught_429.value.status == 429

    server = stub(busy_twice)

    async def main() -> None:
        async with AsyncClient(server.base, retry=FAST) as client:
            assert await client.models() == []

    asyncio.run(main())
    assert server.requests == 3


def test_retry_after_is_read_as_seconds_or_an_http_date() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))
    assert 50 < (retry_after_seconds(later) or 0) <= 60
    policy = RetryPolicy(attempts=4, backoff=1, max_backoff=3)
    for attempt, longest in ((1, 1), (2, 2), (3, 3)):  # doubling, capped, with jitter
        wait = policy.delay(attempt, None)
        assert wait is not None and longest / 2 <= wait <= longest
    assert policy.delay(4, None) is None  # attempts are bounded
    assert policy.delay(1, 2.5) == 2.5 and RetryPolicy(max_retry_after=1).delay(1, 2.5) is None
