"""`POST /admin/reload`: off (404) unless TOKSVC_ADMIN_TOKEN is set, and then wants that bearer
token. It reloads its own worker first (`service.api.lifecycle.reload`) and answers 409 if that
was refused; only then, under several workers, it asks the supervisor (its recorded parent, never
whatever `getppid()` is now) to reload the others, and answers 503 if the supervisor is gone."""

from __future__ import annotations

import hmac
import os
import signal
from typing import Any

from litestar import Request, post
from litestar.exceptions import NotAuthorizedException, NotFoundException

from service.api import lifecycle, problems
from service.api.dependencies import WorkerDep
from service.api.traits import AUTH_EXEMPT
from service.api.wire.info import ReloadResponse
from service.errors import ReloadRefusedError, ReloadUnavailableError


@post(
    "/admin/reload",
    status_code=202,
    opt={"operation": "admin", AUTH_EXEMPT: True},  # its own token
    tags=["admin"],
    summary="Reload the store",
    description="Off (404) unless `TOKSVC_ADMIN_TOKEN` is set; "
    "wants `Authorization: Bearer <token>` (401 otherwise). Every worker loads the store again "
    "and swaps it in only if every file loaded; otherwise the previous store keeps serving.",
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
        raise NotAuthorizedException("a valid bearer token is required",
                                     headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
    if process.supervised and not process.supervisor_alive():
        reason = "this worker's supervisor is gone and the worker is stopping"
        raise ReloadUnavailableError(reason)
    failures = await lifecycle.reload(worker)
    if failures:
        raise ReloadRefusedError(failures)
    if process.supervised:  # several workers: the supervisor passes SIGHUP on to each
        os.kill(process.supervisor_pid, signal.SIGHUP)
        return ReloadResponse(status="reloaded here; requested in every other worker",
                              tokenizers=len(worker.serving()))  # fmt: skip
    return ReloadResponse(status="reloaded", tokenizers=len(worker.serving()))
