"""`POST /admin/reload`: off (404) unless TOKSVC_ADMIN_TOKEN is set, and then wants that bearer
token. A lone worker reloads itself (`service.api.lifecycle.reload`). Under several workers it
asks the supervisor (its recorded parent, never whatever `getppid()` is now; 503 if it is gone)
to reload every worker, itself included, once each, and waits a bounded time for all of them
(`service.api.store_state`): 202 with the store state they all serve, 409 `reload-refused` if
one refused the store, or 409 `reload-inconsistent` with what each serves if they disagree."""

from __future__ import annotations

import hmac
import os
import signal
import time
from typing import Any

from litestar import Request, post
from litestar.exceptions import NotAuthorizedException, NotFoundException

from service.api import lifecycle, problems, store_state
from service.api.dependencies import WorkerDep
from service.api.traits import AUTH_EXEMPT
from service.api.wire.info import ReloadResponse
from service.errors import ReloadInconsistentError, ReloadRefusedError, ReloadUnavailableError


@post(
    "/admin/reload",
    status_code=202,
    opt={"operation": "admin", AUTH_EXEMPT: True},  # its own token
    tags=["admin"],
    summary="Reload the store",
    description="Off (404) unless `TOKSVC_ADMIN_TOKEN` is set; "
    "wants `Authorization: Bearer <token>` (401 otherwise). Every worker loads the store again "
    "and swaps it in only if every file loaded; otherwise the previous store keeps serving. "
    "Under several workers the answer waits for every worker and names the store state they "
    "all serve (409 `reload-inconsistent` if they do not serve one).",
    responses=problems.documented(401, 404),
    response_description="reload done or requested",
)
async def admin_reload(request: Request[Any, Any, Any], worker: WorkerDep) -> ReloadResponse:
    token, process = worker.settings.admin_token, worker.process
    if not token:
        raise NotFoundException()  # off by default: as if there were no such route
    scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
    valid = hmac.compare_digest(given.strip().encode(), token.encode())
    if scheme.lower() != "bearer" or not valid:  # the scheme is case-insensitive (RFC 9110)
        raise NotAuthorizedException(
            "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"}
        )
    if process.supervised and not process.supervisor_alive():
        reason = "this worker's supervisor is gone and the worker is stopping"
        raise ReloadUnavailableError(reason)
    if not process.supervised:
        failures = await lifecycle.reload(worker)
        if failures:
            raise ReloadRefusedError(failures)
        registry = worker.serving()
        return ReloadResponse(
            status="reloaded", tokenizers=len(registry), store_sha256=registry.store_sha256
        )
    since = time.time()
    os.kill(process.supervisor_pid, signal.SIGHUP)  # passed on to every worker, this one too
    answered = await store_state.await_round(process, since)
    if failures := store_state.refusal(answered):
        raise ReloadRefusedError(failures)
    agreed = store_state.agreed(answered)
    if agreed is None:
        raise ReloadInconsistentError(store_state.states(answered))
    return ReloadResponse(
        status="reloaded in every worker",
        tokenizers=len(worker.serving()),
        store_sha256=agreed,
        workers=len(answered),
    )
