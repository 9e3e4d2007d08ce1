"""A worker's life: the first load of the store and its policy, reloads, and the signals.

First load. The store is loaded, and the tokenizers TOKSVC_PRELOAD names are built
(service.store.preload), before the worker serves: `/readyz` turns ready after them. A worker
with no tokenizer does not start. A worker that the supervisor starts later (after a crash)
refuses to start on a store with failures once a store has served (the "served" marker in the
shared state directory), or on a store state (manifest sha256) that none of the running workers
serves (the store changed on disk and was not reloaded), so it never serves something other
than its siblings do; the supervisor retries it. In strict mode (TOKSVC_STRICT) any failure
refuses the start. A worker that loaded joins the roster (`WorkerProcess.mark_loaded`), which
`/readyz` counts.

Reload. On SIGHUP (and `POST /admin/reload`, `routes.admin`) a worker loads the store again
(preloading again) and swaps the new registry in, in one assignment, only if every file loaded;
otherwise the old one keeps serving and the refusal is logged, counted and shown on `/readyz`.
Either way it records in the roster the store state it serves and that it answered
(`service.api.store_state`). Requests in flight keep the tokenizer they resolved. One reload at
a time per worker (`worker.reload_lock`): six concurrent reloads held six stores in memory.
Under several workers, SIGHUP to the supervisor is passed on to each.

Signals: one mechanism, `signal.signal` with chaining. uvicorn installs its own SIGTERM/SIGINT
handlers with `signal.signal` (so that it can restore them and re-raise the signal after a
graceful stop); `loop.add_signal_handler` would replace them rather than run before them, and
uvicorn would never hear of the stop. So every handler here is installed with `signal.signal`,
hands its work to the event loop (`call_soon_threadsafe`), calls the handler it replaced, and is
taken back when the app stops. Python runs signal handlers in the main thread only: an app run
by an in-process test client (another thread) gets no handlers, and needs none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, NoReturn

import anyio.to_thread
from litestar import Litestar

from service.api import metrics
from service.api.process.handoff import WorkerProcess
from service.api.process.supervisor import STARTUP_FAILURE
from service.api.worker import Worker, worker_of
from service.errors import StoreError
from service.runtime import load_registry
from service.settings import Settings
from service.store.preload import preload
from service.store.registry import Registry

log = logging.getLogger("toksvc")
SERVED_MARKER = "store-served"
STARTED = time.time()  # when this worker process started: workers started together are peers
PARENT_POLL_SECONDS = 1.0


@contextlib.asynccontextmanager
async def running(app: Litestar) -> AsyncIterator[None]:
    """The app's lifespan: load (unless given a registry), listen to signals, leave the roster
    and take the handlers back when the app stops."""
    worker = worker_of(app)
    loads = worker.registry is None  # an app given its registry (a test) neither loads nor reloads
    if loads:
        worker.registry = await initial_load(worker.settings, worker.process)
    undo = [on_signal(sig, worker.stopping.set) for sig in (signal.SIGTERM, signal.SIGINT)]
    if loads:
        undo.append(on_signal(signal.SIGHUP, lambda: _spawn(reload(worker))))
    serving = worker.registry.store_sha256 if worker.registry is not None else ""
    worker.process.mark_loaded(os.getpid(), serving)
    watch = watch_supervisor(worker.process)
    try:
        yield
    finally:
        worker.process.forget(os.getpid())
        if watch is not None:
            watch.cancel()
        for take_back in reversed(undo):
            take_back()


def load_preloaded(settings: Settings) -> Registry:
    """The store's registry with the tokenizers `settings.preload` names built (in a thread)."""
    registry = load_registry(settings)
    if settings.preload:
        seconds = preload(registry, settings.preload)
        log.info("store: preloaded %s in %.2fs", settings.preload, seconds)
    return registry


async def initial_load(settings: Settings, process: WorkerProcess) -> Registry:
    """The registry a worker starts with (see the module docstring for when it refuses)."""
    registry = await anyio.to_thread.run_sync(load_preloaded, settings)
    for failure in registry.failures:
        log.error("store: %s", failure)
    where = os.pathsep.join(map(str, settings.stores))
    log.info(
        "store: %d tokenizers loaded from %s in %.2fs", len(registry), where, registry.load_seconds
    )
    if not len(registry):
        why = "; ".join(map(str, registry.failures[:3])) or "the manifests list none"
        reason = (
            f"no tokenizer loaded ({why}); a worker with nothing to serve does not start: "
            "fix TOKSVC_STORE / --store or the files they name"
        )
        _refuse_start(process, StoreError(where, reason))
    broken = not registry.complete
    served = _served_before(process)
    if broken:
        metrics.STORE_LOAD_FAILURES.set(max(1, len(registry.failures)))
    if broken and served:
        metrics.RELOADS.labels("refused").inc()
        reason = (
            "the store has failures and an earlier one served here; this worker does not "
            "start, the running ones keep serving"
        )
        _refuse_start(process, StoreError(where, reason))
    siblings = {e.store for pid, e in process.roster().items() if pid != os.getpid()}
    if served and siblings and registry.store_sha256 not in siblings:
        reason = (
            f"the store on disk (manifest sha256 {registry.store_sha256[:12]}) is not the one the "
            f"running workers serve ({', '.join(sorted(s[:12] for s in siblings))}); this worker "
            "does not start until a reload (SIGHUP) moves them onto it"
        )
        _refuse_start(process, StoreError(where, reason))
    if broken and settings.strict:
        reason = (
            f"{len(registry.failures)} file(s) failed to load and TOKSVC_STRICT is on; "
            "fix or restore the store, or turn strict off"
        )
        _refuse_start(process, StoreError(where, reason))
    if served:
        metrics.RELOADS.labels("ok").inc()
    elif not broken and process.state_dir:
        (Path(process.state_dir) / SERVED_MARKER).touch()
    metrics.publish_registry(registry)
    return registry


def _refuse_start(process: WorkerProcess, exc: StoreError) -> NoReturn:
    """A worker under the supervisor exits with status 3 and one log line (the supervisor retries
    it with back-off); a lone worker raises, so that uvicorn reports the failed start-up."""
    if process.supervised:
        log.error("this worker does not start: %s", exc)
        for handler in [*logging.getLogger().handlers, *log.handlers]:
            handler.flush()
        os._exit(STARTUP_FAILURE)
    raise exc


def _served_before(process: WorkerProcess) -> bool:
    """Had a store served here before this worker started? (Not so for the workers that start
    together: the first one to finish loading must not make its peers count as reloads.)"""
    if not process.state_dir:
        return False
    marker = Path(process.state_dir) / SERVED_MARKER
    return marker.exists() and marker.stat().st_mtime < STARTED


async def reload(worker: Worker) -> list[str]:
    """Load the store again; swap it in only if every file loaded. Returns the failures.
    One reload at a time in this worker: a second one waits for the first."""
    async with worker.reload_lock:
        began = time.time()  # a reload waiting for the lock begins when it has it
        settings = worker.settings
        registry = await anyio.to_thread.run_sync(load_preloaded, settings)
        if not registry.complete:
            for failure in registry.failures:
                log.error("reload refused: %s", failure)
            metrics.RELOADS.labels("refused").inc()
            metrics.STORE_LOAD_FAILURES.set(max(1, len(registry.failures)))
            failures = [str(f) for f in registry.failures] or ["the store has no tokenizer"]
            serving = worker.registry.store_sha256 if worker.registry is not None else ""
            worker.process.mark_loaded(os.getpid(), serving, failures, began=began)
            return failures
        previous = worker.registry
        worker.registry = registry  # one assignment: a request sees the old registry or the new
        worker.process.mark_loaded(os.getpid(), registry.store_sha256, began=began)
        metrics.publish_registry(registry, previous)
        metrics.RELOADS.labels("ok").inc()
        where = os.pathsep.join(map(str, settings.stores))
        log.info("reload: %d tokenizers from %s", len(registry), where)
        return []


def workers_loaded(worker: Worker) -> tuple[int | None, int | None]:
    """For `/readyz`: how many workers this `toksvc serve` runs now (after any SIGTTIN/SIGTTOU),
    and how many have loaded the store (both None for a lone worker: no siblings to count)."""
    loaded = worker.process.loaded()
    return (None, None) if loaded is None else (worker.process.current_workers(), loaded)


_tasks: set[asyncio.Task[Any]] = set()  # tasks started by signals, kept until they end


def _spawn(work: Any) -> None:
    task = asyncio.get_running_loop().create_task(work)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def on_signal(sig: signal.Signals, callback: Callable[[], None]) -> Callable[[], None]:
    """Run `callback` in the running event loop when `sig` arrives, then the handler that was
    there before (uvicorn's, for SIGTERM and SIGINT). Returns what takes the handler back."""
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(sig)

    def handler(signum: int, frame: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile
            loop.call_soon_threadsafe(callback)
        if callable(previous):
            previous(signum, frame)

    try:
        signal.signal(sig, handler)
    except ValueError:  # not the main thread (an in-process test client): no signals to hear
        log.debug("no %s handler: the event loop is not in the main thread", sig.name)
        return lambda: None

    def take_back() -> None:
        if signal.getsignal(sig) is handler:
            signal.signal(sig, previous)

    return take_back


def watch_supervisor(process: WorkerProcess) -> asyncio.Task[None] | None:
    """Under a supervisor: stop gracefully (SIGTERM to oneself) once the supervisor that started
    this worker is gone, instead of serving on as an orphan that nobody restarts or reloads."""
    if not process.supervised:
        return None

    async def watch() -> None:
        while process.supervisor_alive():
            await asyncio.sleep(PARENT_POLL_SECONDS)
        log.error("The supervisor [%d] is gone: this worker stops.", process.supervisor_pid)
        signal.raise_signal(signal.SIGTERM)

    return asyncio.get_running_loop().create_task(watch())
