"""The one signal mechanism: a handler that runs its work in the event loop, then the handler it
replaced (uvicorn's, for SIGTERM and SIGINT), and is taken back when the app stops."""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any

from service.api.lifecycle import on_signal


def test_on_signal_runs_in_the_loop_chains_to_the_previous_handler_and_is_taken_back() -> None:
    seen: list[str] = []

    def previous(signum: int, frame: Any) -> None:
        seen.append("previous")

    async def main() -> None:
        fired = asyncio.Event()
        take_back = on_signal(signal.SIGUSR1, lambda: (seen.append("loop"), fired.set()))
        signal.raise_signal(signal.SIGUSR1)
        await asyncio.wait_for(fired.wait(), 5)
        take_back()

    before = signal.signal(signal.SIGUSR1, previous)
    try:
        asyncio.run(main())
        assert seen == ["previous", "loop"]  # the previous handler at once, ours in the loop
        assert signal.getsignal(signal.SIGUSR1) is previous
    finally:
        signal.signal(signal.SIGUSR1, before)


def test_off_the_main_thread_there_is_no_handler_and_no_error() -> None:
    results: list[object] = []

    def run() -> None:
        async def main() -> None:
            take_back = on_signal(signal.SIGUSR1, lambda: None)
            take_back()
            results.append(signal.getsignal(signal.SIGUSR1))

        asyncio.run(main())

    before = signal.getsignal(signal.SIGUSR1)
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert results == [before]
