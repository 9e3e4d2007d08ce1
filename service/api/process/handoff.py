"""What `toksvc serve` hands each of its workers, typed: the exact `Settings` the CLI built
(including --store, --host, --port, --workers) and the process plumbing (`WorkerProcess`), which
is not the user's to set. Both travel msgspec-encoded in one environment variable, read once by
the worker's app factory (`received`). Without it, e.g. `uvicorn service.api.app:create_app
--factory` started by hand, a worker reads `Settings.from_env()` and runs alone.

`WorkerProcess` also owns the roster in the shared state directory: each worker that has loaded
the store leaves a file named by its pid in `loaded/` saying which store state it serves and when
it last loaded or reloaded (`RosterEntry`), removes it when it stops, and the supervisor removes a
dead worker's (`forget`). `/readyz` reports the count and whether the workers agree, next to the
number of worker slots the supervisor runs now (`publish_workers`: SIGTTIN and SIGTTOU change
it). This module imports neither prometheus_client nor the app: `serve` and the supervisor import
it before PROMETHEUS_MULTIPROC_DIR is set.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from service.settings import Settings, path_hook

ENV = "TOKSVC_HANDOFF"  # set by `toksvc serve` for its workers; not a setting
WORKERS_FILE = "workers"  # in the state directory: the supervisor's current slot count


class RosterEntry(msgspec.Struct, frozen=True, kw_only=True):
    store: str  # the store state the worker serves (`Registry.store_sha256`)
    at: float  # when it last loaded or finished a reload (time.time())
    began: float = 0.0  # when that load or reload began: a round counts only those begun after it
    failures: list[str] = []  # why its last reload was refused (the first few); [] if it was not


class WorkerProcess(msgspec.Struct, frozen=True, kw_only=True):
    """Where a worker runs. The default is a lone worker: no shared state, no supervisor."""

    state_dir: str = ""  # shared by the workers of one `toksvc serve` (metrics files, roster)
    workers: int = 1  # how many workers that `toksvc serve` runs
    supervisor_pid: int = 0  # several workers: the supervisor; a worker outliving it stops

    @property
    def supervised(self) -> bool:
        return self.supervisor_pid != 0

    def supervisor_alive(self) -> bool:
        """Is this worker still the child of the supervisor that started it?"""
        return self.supervised and os.getppid() == self.supervisor_pid

    def _roster(self) -> Path:
        return Path(self.state_dir) / "loaded"

    def mark_loaded(
        self, pid: int, store: str = "", failures: Sequence[str] = (), *, began: float = 0.0
    ) -> None:
        """Record that worker `pid` serves store state `store` (its first load, and every reload
        it finished, refused or not: `RosterEntry.at` says when it last answered, `began` when
        that load began)."""
        if self.state_dir:
            self._roster().mkdir(exist_ok=True)
            entry = self._roster() / str(pid)
            tmp = entry.with_name(f".{pid}.tmp")  # renamed into place: never read half-written
            now = time.time()
            entry_now = RosterEntry(
                store=store, at=now, began=began or now, failures=list(failures[:5])
            )
            tmp.write_bytes(msgspec.json.encode(entry_now))
            os.replace(tmp, entry)

    def roster(self) -> dict[int, RosterEntry]:
        """The workers that have loaded the store: pid -> what each serves."""
        entries: dict[int, RosterEntry] = {}
        for path in self._entries():
            with contextlib.suppress(OSError, msgspec.MsgspecError, ValueError):
                entries[int(path.name)] = msgspec.json.decode(path.read_bytes(), type=RosterEntry)
        return entries

    def _entries(self) -> list[Path]:
        try:
            return [p for p in self._roster().iterdir() if p.name.isdigit()]
        except OSError:
            return []

    def forget(self, pid: int) -> None:
        """A worker that stopped or died no longer counts as loaded."""
        if self.state_dir:
            with contextlib.suppress(OSError):
                (self._roster() / str(pid)).unlink()

    def publish_workers(self, count: int) -> None:
        """The supervisor records how many worker slots it runs now (renamed into place, so a
        reader sees the old count or the new one)."""
        if self.state_dir:
            path = Path(self.state_dir) / WORKERS_FILE
            tmp = path.with_name(f".{WORKERS_FILE}.tmp")
            tmp.write_text(str(count))
            os.replace(tmp, path)

    def current_workers(self) -> int:
        """How many worker slots the supervisor runs now (the start-up count until it says)."""
        try:
            return int((Path(self.state_dir) / WORKERS_FILE).read_text())
        except (OSError, ValueError):
            return self.workers

    def loaded(self) -> int | None:
        """How many workers have loaded the store; None for a lone worker (nobody to count)."""
        return len(self._entries()) if self.state_dir else None


class Handoff(msgspec.Struct, frozen=True, kw_only=True):
    settings: Settings
    process: WorkerProcess = msgspec.field(default_factory=WorkerProcess)


def hand_on(handoff: Handoff) -> None:
    """Make `handoff` what the workers started from this process receive."""
    os.environ[ENV] = msgspec.json.encode(handoff, enc_hook=_encode).decode()


def received(environ: Mapping[str, str] | None = None) -> Handoff:
    """What `toksvc serve` handed this worker, or the environment's settings for a lone worker."""
    raw = (os.environ if environ is None else environ).get(ENV)
    if not raw:
        return Handoff(settings=Settings.from_env(environ))
    return msgspec.json.decode(raw, type=Handoff, dec_hook=path_hook)


def _encode(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise NotImplementedError(type(value))
