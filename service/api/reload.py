"""Hot reload: re-read the store and swap the registry atomically, or keep the old one.

A worker reloads in place on SIGHUP (and through `POST /admin/reload`, which is off unless
TOKSVC_ADMIN_TOKEN is set and wants that bearer token). The new registry replaces the old only if
every file loaded; otherwise the old one keeps serving and the refusal is logged and counted.
Requests in flight keep the tokenizer they resolved. Under several workers, SIGHUP to the
supervisor is passed on to every worker (`service.api.supervisor.Supervisor`). A worker that
the supervisor starts later (after a crash) refuses to start on a store with failures once a store
has served, so it never serves something other than its siblings do; the supervisor retries it.

One reload at a time per worker (a lock): six concurrent reloads held six stores in memory. The
admin route reloads its own worker first and answers 409 if that was refused; only then, under
several workers, it asks the supervisor (its recorded parent, never whatever `getppid()` is now)
to reload the others, and answers 503 if the supervisor is gone.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any, NoReturn

import anyio.to_thread
from litestar import Request, post
from litestar.exceptions import NotAuthorizedException, NotFoundException

from service.api import metrics, problems
from service.api.supervisor import STARTUP_FAILURE, supervisor_alive
from service.api.wire import ReloadResponse
from service.api.worker import Worker
from service.errors import ReloadRefusedError, ReloadUnavailableError, StoreError
from service.runtime import load_registry
from service.settings import Settings
from service.store.registry import Registry

log = logging.getLogger("toksvc")
SERVED_MARKER = "store-served"
STARTED = time.time()  # when this worker process started: workers started together are peers


async def initial_load(settings: Settings) -> Registry:
    """The registry a worker starts with (see the module docstring for when it refuses)."""
    registry = await anyio.to_thread.run_sync(load_registry, settings)
    for failure in registry.failures:
        log.error("store: %s", failure)
    where = os.pathsep.join(map(str, settings.stores))
    log.info("store: %d tokenizers loaded from %s in %.2fs", len(registry), where,
             registry.load_seconds)  # fmt: skip
    if not len(registry):
        why = "; ".join(map(str, registry.failures[:3])) or "the manifests list none"
        reason = (f"no tokenizer loaded ({why}); a worker with nothing to serve does not start: "
                  "fix TOKSVC_STORE / --store or the files they name")  # fmt: skip
        _refuse_start(settings, StoreError(where, reason))
    broken = not registry.complete
    served = _served_before(settings)
    if broken:
        metrics.STORE_LOAD_FAILURES.set(max(1, len(registry.failures)))
    if broken and served:
        metrics.RELOADS.labels("refused").inc()
        reason = ("the store has failures and an earlier one served here; this worker does not "
                  "start, the running ones keep serving")  # fmt: skip
        _refuse_start(settings, StoreError(where, reason))
    if broken and settings.strict:
        reason = (f"{len(registry.failures)} file(s) failed to load and TOKSVC_STRICT is on; "
                  "fix or restore the store, or turn strict off")  # fmt: skip
        _refuse_start(settings, StoreError(where, reason))
    if served:
        metrics.RELOADS.labels("ok").inc()
    elif not broken and settings.state_dir:
        (Path(settings.state_dir) / SERVED_MARKER).touch()
    metrics.publish_registry(registry)
    return registry


def _refuse_start(settings: Settings, exc: StoreError) -> NoReturn:
    """A worker under the supervisor exits with status 3 and one log line (the supervisor retries
    it with back-off); a lone worker raises, so that uvicorn reports the failed start-up."""
    if settings.supervised:
        log.error("this worker does not start: %s", exc)
        for handler in [*logging.getLogger().handlers, *log.handlers]:
            handler.flush()
        os._exit(STARTUP_FAILURE)
    raise exc


def _served_before(settings: Settings) -> bool:
    """Had a store served here before this worker started? (Not so for the workers that start
    together: the first one to finish loading must not make its peers count as reloads.)"""
    if not settings.state_dir:
        return False
    marker = Path(settings.state_dir) / SERVED_MARKER
    return marker.exists() and marker.stat().st_mtime < STARTED


async def reload(worker: Worker) -> list[str]:
    """Load the store again; swap it in only if every file loaded. Returns the failures.
    One reload at a time in this worker: a second one waits for the first."""
    async with worker.reload_lock:
        return await _reload(worker)


async def _reload(worker: Worker) -> list[str]:
    settings = worker.settings
    registry = await anyio.to_thread.run_sync(load_registry, settings)
    if not registry.complete:
        for failure in registry.failures:
            log.error("reload refused: %s", failure)
        metrics.RELOADS.labels("refused").inc()
        metrics.STORE_LOAD_FAILURES.set(max(1, len(registry.failures)))
        return [str(f) for f in registry.failures] or ["the store has no tokenizer"]
    previous = worker.registry
    worker.registry = registry  # one assignment: a request sees the old registry or the new one
    metrics.publish_registry(registry, previous)
    metrics.RELOADS.labels("ok").inc()
    log.info(
        "reload: %d tokenizers from %s", len(registry), os.pathsep.join(map(str, settings.stores))
    )
    return []


def on_sighup(worker: Worker) -> None:
    """Reload this worker when it receives SIGHUP."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[list[str]]] = set()

    def start() -> None:
        task = loop.create_task(reload(worker))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    try:
        loop.add_signal_handler(signal.SIGHUP, start)
    except (ValueError, RuntimeError):  # not the main thread (an in-process test client)
        log.debug("no SIGHUP reload: the event loop is not in the main thread")


@post(
    "/admin/reload",
    status_code=202,
    opt={"operation": "admin"},
    tags=["admin"],
    summary="Reload the store",
    description="Off (404) unless `TOKSVC_ADMIN_TOKEN` is set; "
    "wants `Authorization: Bearer <token>` (401 otherwise). Every worker loads the store again "
    "and swaps it in only if every file loaded; otherwise the previous store keeps serving.",
    responses=problems.documented(401, 404),
    response_description="reload done or requested",
)
async def admin_reload(request: Request[Any, Any, Any], worker: Worker) -> ReloadResponse:
    settings = worker.settings
    if not settings.admin_token:
        raise NotFoundException()  # off by default: as if there were no such route
    scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
    valid = hmac.compare_digest(given.strip().encode(), settings.admin_token.encode())
    if scheme.lower() != "bearer" or not valid:  # the scheme is case-insensitive (RFC 9110)
        raise NotAuthorizedException("a valid bearer token is required",
                                     headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
    if settings.supervised and not supervisor_alive(settings):
        reason = "this worker's supervisor is gone and the worker is stopping"
        raise ReloadUnavailableError(reason)
    failures = await reload(worker)
    if failures:
        raise ReloadRefusedError(failures)
    if settings.supervised:  # several workers: the supervisor passes SIGHUP on to each
        os.kill(settings.supervisor_pid, signal.SIGHUP)
        return ReloadResponse(status="reloaded here; requested in every other worker",
                              tokenizers=len(worker.serving()))  # fmt: skip
    return ReloadResponse(status="reloaded", tokenizers=len(worker.serving()))
