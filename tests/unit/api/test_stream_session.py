"""The stream session on its own, driven through an in-memory transport: what it sends, how it
ends and that its slot always comes back. (Both forms over real HTTP: tests/integration.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from service.api.routes.streams.session import STOPPING, Failure, Received, StreamSession
from service.api.worker import Worker
from service.errors import LimitExceededError, TooManyStreamsError
from service.settings import Settings
from service.store.registry import Registry

REF = "cl100k_base"  # 15339 "hello", 1917 " world", 9468 the first half of an emoji


class Recorder:
    """A client that sends `incoming`, then nothing more; records what the session sends."""

    def __init__(self, *incoming: Received) -> None:
        self.incoming = list(incoming)
        self.sent: list[list[Any]] = []
        self.end: tuple[str, list[Any], Failure | None] | None = None

    async def open(self) -> None:
        pass

    async def receive(self) -> Received:
        if self.incoming:
            return self.incoming.pop(0)
        await asyncio.Event().wait()  # silent until cut off
        raise AssertionError("unreachable")

    async def send(self, lines: list[bytes]) -> None:
        self.sent.append([json.loads(line) for line in lines])

    async def close(self, lines: list[bytes], *, stopping: bool) -> None:
        self.end = ("stopping" if stopping else "done", [json.loads(x) for x in lines], None)

    async def fail(self, lines: list[bytes], failure: Failure) -> None:
        self.end = ("error", [json.loads(x) for x in lines], failure)


def session(worker: Worker, registry: Registry, idle_seconds: float = 60.0) -> StreamSession:
    return StreamSession(
        worker,
        registry.resolve(REF),
        "ndjson",
        errors="replace",
        usage=False,
        model=None,
        idle_seconds=idle_seconds,
    )


def run(worker: Worker, registry: Registry, transport: Recorder, idle: float = 60.0) -> None:
    async def main() -> None:
        await session(worker, registry, idle).run(transport)

    asyncio.run(main())
    assert worker.stream_slots.open == 0


def test_answers_before_a_bad_message_are_sent_with_its_error(registry: Registry) -> None:
    worker = Worker(Settings(), registry)
    client = Recorder(Received([b'{"ids": [15339]}', b"not json", b'{"ids": [1917]}']))
    run(worker, registry, client)
    assert client.end is not None and client.sent == []
    kind, lines, failure = client.end
    assert kind == "error" and lines == [{"text": "hello"}]
    assert failure is not None and failure.kind == "invalid-body"
    assert json.loads(failure.line)["error"]["status"] == 400


def test_final_ends_the_stream_and_what_follows_is_ignored(registry: Registry) -> None:
    worker = Worker(Settings(), registry)
    final = Received([b'{"ids": [15339]}', b'{"ids": [1917], "final": true}', b'{"ids": [1]}'])
    client = Recorder(final, Received([b'{"ids": [15339]}']))
    run(worker, registry, client)
    assert client.end == ("done", [{"text": "hello"}, {"text": " world", "done": True}], None)
    assert client.sent == [] and len(client.incoming) == 1


def test_the_end_of_the_input_flushes_the_held_bytes(registry: Registry) -> None:
    worker = Worker(Settings(), registry)
    client = Recorder(Received([b'{"ids": [15339]}']), Received([b'{"ids": [9468]}'], ended=True))
    run(worker, registry, client)
    assert client.sent == [[{"text": "hello"}]]
    assert client.end == ("done", [{"text": ""}, {"text": "\ufffd", "done": True}], None)


def test_a_stopping_worker_hands_back_a_state_that_resumes_exactly(registry: Registry) -> None:
    """Cut short mid-character (9468 is the first of 🎉's three ids), the last line holds the
    bytes in its `state`, not flushed as U+FFFD; a new stream sent that state completes 🎉."""
    worker = Worker(Settings(), registry)
    client = Recorder(Received([b'{"ids": [1917, 9468]}']))

    async def main() -> None:
        asyncio.get_running_loop().call_later(0.05, worker.stopping.set)
        await session(worker, registry).run(client)

    asyncio.run(main())
    assert client.sent == [[{"text": " world"}]]
    assert client.end is not None and client.end[0] == "stopping"
    (last,) = client.end[1]
    state = last.pop("state")
    assert state and last == {"text": "", "done": True, "reason": STOPPING}
    assert worker.stream_slots.open == 0

    rest = json.dumps({"state": state, "ids": [236, 231]}).encode()
    resumed = Recorder(Received([rest], ended=True))
    run(Worker(Settings(), registry), registry, resumed)
    assert resumed.end == ("done", [{"text": "🎉"}, {"text": "", "done": True}], None)


def test_a_state_goes_on_the_first_message_only(registry: Registry) -> None:
    worker = Worker(Settings(), registry)
    client = Recorder(Received([b'{"ids": [15339]}', b'{"ids": [1917], "state": "u8.0."}']))
    run(worker, registry, client)
    assert client.end is not None and client.end[0] == "error" and client.end[2] is not None
    assert client.end[2].kind == "invalid-stream-option"
    assert json.loads(client.end[2].line)["error"]["field"] == "state"


@pytest.mark.parametrize(
    ("stream_seconds", "idle", "what"),
    [
        (0.2, 60.0, "stream duration in seconds"),  # the deadline comes first: not "idle seconds"
        (60.0, 0.2, "idle seconds"),
    ],
)
def test_the_deadline_and_the_idle_limit_are_told_apart(
    registry: Registry, stream_seconds: float, idle: float, what: str
) -> None:
    worker = Worker(Settings(max_stream_seconds=stream_seconds), registry)
    client = Recorder(Received([b'{"ids": [15339]}']))
    run(worker, registry, client, idle)
    assert client.sent == [[{"text": "hello"}]]
    assert client.end is not None and client.end[0] == "error" and client.end[2] is not None
    error = client.end[2].error
    assert isinstance(error, LimitExceededError) and error.what == what
    assert client.end[2].kind == "limit-exceeded"


class Broken(Recorder):
    async def send(self, lines: list[bytes]) -> None:
        raise OSError("connection reset")


def test_the_slot_is_taken_first_and_always_given_back(registry: Registry) -> None:
    worker = Worker(Settings(max_streams_per_worker=1), registry)
    first = session(worker, registry)
    with pytest.raises(TooManyStreamsError):
        session(worker, registry)
    with pytest.raises(OSError, match="connection reset"):
        asyncio.run(first.run(Broken(Received([b'{"ids": [15339]}']))))
    assert worker.stream_slots.open == 0
    run(worker, registry, Recorder(Received(ended=True)))  # the slot is free again
