"""Which store state each worker serves, and whether a reload left them all on one.

Each worker records in the roster (`WorkerProcess.mark_loaded`) the store state it serves (the
manifest's sha256, `Registry.store_sha256`) after its first load and after every reload, refused
or not. A reload passed on to every worker by the supervisor (SIGHUP) has ended when every worker
in the roster has recorded since it began: `await_round` waits for that, for a bounded time. An
admin reload answers with the one state they all serve, or says they do not (409
`reload-inconsistent`: the store changed while they loaded it, or a worker did not answer).
`/readyz` answers 503 for as long as the workers disagree (`disagreement`), and warns while a
worker's last reload was refused (`refused_reload`: it serves the store it had).
"""

from __future__ import annotations

import asyncio
import os
import time

from service.api.process.handoff import RosterEntry, WorkerProcess

RELOAD_WAIT_SECONDS = 60.0  # a reload of every shipped tokenizer takes a few seconds per worker
POLL_SECONDS = 0.1
NO_ANSWER = "no answer"


async def await_round(
    process: WorkerProcess, since: float, seconds: float = RELOAD_WAIT_SECONDS
) -> dict[int, RosterEntry | None]:
    """Every worker in the roster and what it recorded of a load begun since `since` (None:
    nothing yet, when `seconds` ran out; a reload that began before `since` and ended after it,
    e.g. an earlier SIGHUP's, does not answer). Ends as soon as all of them, this worker
    included, have recorded."""
    deadline = time.monotonic() + seconds
    while True:
        roster = process.roster()
        answered = {pid: e if e.began >= since else None for pid, e in sorted(roster.items())}
        done = answered.get(os.getpid()) is not None and None not in answered.values()
        if done or time.monotonic() >= deadline:
            return answered
        await asyncio.sleep(POLL_SECONDS)


def states(answered: dict[int, RosterEntry | None]) -> dict[str, str]:
    """pid -> the store state each worker serves, or NO_ANSWER."""
    return {str(pid): NO_ANSWER if e is None else e.store for pid, e in answered.items()}


def agreed(answered: dict[int, RosterEntry | None]) -> str | None:
    """The one store state every worker serves, if they all answered and agree."""
    held = set(states(answered).values())
    return next(iter(held)) if len(held) == 1 and NO_ANSWER not in held else None


def refusal(answered: dict[int, RosterEntry | None]) -> list[str]:
    """Why a worker refused this reload (the first one that did), or []."""
    return next((e.failures for e in answered.values() if e is not None and e.failures), [])


def refused_reload(process: WorkerProcess) -> list[str]:
    """For `/readyz`: why the last reload of a worker was refused (the first such worker's), or
    [] when every worker's last load went through."""
    return next((e.failures for e in process.roster().values() if e.failures), [])


def disagreement(process: WorkerProcess) -> str | None:
    """For `/readyz` (503 with it): why, while the workers serve different store states."""
    held = {e.store for e in process.roster().values()}
    if len(held) <= 1:
        return None
    shown = ", ".join(sorted(h[:12] for h in held))
    return (
        f"the workers serve {len(held)} different store states (manifest sha256 {shown}); "
        "reload again (POST /admin/reload or SIGHUP) once the store is complete"
    )
