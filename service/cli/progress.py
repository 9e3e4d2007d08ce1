"""Training's progress on stderr: on a terminal, a bar redrawn in place (`\\r`) at each whole
percent; anywhere else (a log file, a pipe, a CI job), a plain line at each tenth of the way, so
a log holds about eleven readable lines and no carriage returns."""

from __future__ import annotations

import sys
from typing import TextIO

_WIDTH = 40


class MergeProgress:
    """Called with (merges learned, merges wanted) after each merge; `finish` after the last one
    shows where training ended (it may stop short of the total) and ends the bar's line."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._tty = self._stream.isatty()
        self._steps = 100 if self._tty else 10
        self._last: tuple[int, int] | None = None  # the last state seen
        self._shown: tuple[int, int] | None = None  # the last state written

    def __call__(self, done: int, total: int) -> None:
        self._last = (done, total)
        step = self._steps * done // max(total, 1)
        if done == total or step != self._steps * (done - 1) // max(total, 1):
            self._show(done, total)

    def finish(self) -> None:
        if self._last is not None and self._last != self._shown:
            self._show(*self._last)
        if self._tty and self._shown is not None:
            print(file=self._stream, flush=True)

    def _show(self, done: int, total: int) -> None:
        self._shown = (done, total)
        if self._tty:
            filled = _WIDTH * done // max(total, 1)
            bar = f"[{'#' * filled}{'.' * (_WIDTH - filled)}]"
            print(f"\rmerges {bar} {done}/{total}", end="", file=self._stream, flush=True)
        else:
            percent = 100 * done // max(total, 1)
            print(f"merges {done}/{total} ({percent}%)", file=self._stream, flush=True)
