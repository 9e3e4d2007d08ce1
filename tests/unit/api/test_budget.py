"""`run_work`: work over the inline size runs in a thread that stops when its client goes or the
worker stops (issue 23: CPU work ran on after the client had gone, and SIGTERM waited for it)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from service.api.budget import INLINE_WORK_BYTES, announced_size, run_work, working_for
from service.api.worker import Worker
from service.bpe.deadline import Deadline
from service.errors import WorkStoppedError
from service.settings import Settings


def spin(started: threading.Event) -> Callable[[Deadline], str]:
    """Work that checks its deadline until it is stopped (or 30 s pass: then it ends normally)."""

    def work(deadline: Deadline) -> str:
        started.set()
        end = time.monotonic() + 30
        while time.monotonic() < end:
            deadline.check()
            time.sleep(0.002)
        return "ran to its end"

    return work


async def stopped_by(trigger: Callable[[Worker, asyncio.Event], None]) -> None:
    worker = Worker(Settings())
    client_gone = asyncio.Event()

    async def receive() -> Any:  # the body was read: the next message says the client left
        await client_gone.wait()
        return {"type": "http.disconnect"}

    started = threading.Event()
    with working_for(worker, receive):
        task = asyncio.ensure_future(run_work(INLINE_WORK_BYTES + 1, spin(started)))
        await asyncio.to_thread(started.wait, 10)
        assert not task.done()
        trigger(worker, client_gone)
        await task


@pytest.mark.parametrize("who", ["client", "worker"])
def test_work_in_a_thread_stops_when_its_client_goes_or_the_worker_stops(who: str) -> None:
    def trigger(worker: Worker, client_gone: asyncio.Event) -> None:
        (client_gone if who == "client" else worker.stopping).set()

    with pytest.raises(WorkStoppedError):
        asyncio.run(stopped_by(trigger))


def test_small_work_runs_inline_with_the_deadline_of_the_setting() -> None:
    async def main() -> float:
        with working_for(Worker(Settings(max_work_seconds=7)), _never):
            return await run_work(10, lambda d: d.seconds)

    assert asyncio.run(main()) == 7


async def _never() -> Any:
    await asyncio.Event().wait()


@pytest.mark.parametrize(
    ("value", "size"), [(b"12", 12), (b"12 ", 12), (b" \t12\t ", 12), (b"0", 0)]
)
def test_the_announced_size_is_the_content_length_without_its_whitespace(
    value: bytes, size: int
) -> None:
    assert announced_size({"headers": [(b"content-length", value)]}) == size  # type: ignore[typeddict-item]


@pytest.mark.parametrize("value", [b"", b"12x", b"+12", b"1 2", b"\xd9\xa1"])
def test_an_announced_size_that_is_not_a_number_is_refused(value: bytes) -> None:
    with pytest.raises(ValueError, match="not a number"):
        announced_size({"headers": [(b"content-length", value)]})  # type: ignore[typeddict-item]
