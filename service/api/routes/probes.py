"""Liveness and readiness, for load balancers and orchestrators."""

from __future__ import annotations

from service.api import lifecycle, store_state
from service.api.dependencies import WorkerDep
from service.api.openapi import json_get
from service.api.traits import AUTH_EXEMPT
from service.api.wire.info import HealthResponse
from service.errors import NotReadyError
from service.runtime import native_missing_warning

REFUSED = "the last reload was refused: the store before it keeps serving; fix the store, reload"


@json_get(
    "/healthz",
    name="health",
    tag="probes",
    summary="Liveness",
    returns="alive",
    problems=(),
    traits=(AUTH_EXEMPT,),
)
def healthz() -> HealthResponse:
    """200 while the process runs, even while the store loads."""
    return HealthResponse(status="ok")


@json_get(
    "/readyz",
    name="health",
    tag="probes",
    summary="Readiness",
    returns="ready to serve",
    traits=(AUTH_EXEMPT,),
)
def readyz(worker: WorkerDep) -> HealthResponse:
    """200 once the store is loaded, the tokenizers TOKSVC_PRELOAD names are built, and this
    worker serves (with the `failures` of a refused last reload while the store before it
    serves); 503 (problem, with `Retry-After` and the files that failed) before that, and while
    the workers serve different store states."""
    registry = worker.registry
    if registry is None or not registry.complete:
        failures = [str(f) for f in registry.failures] if registry is not None else []
        serving = registry is not None and len(registry) > 0
        raise NotReadyError(failures, serving=serving)
    disagreement = store_state.disagreement(worker.process)
    if disagreement:  # two workers could answer one request differently
        raise NotReadyError([disagreement], serving=True, reason=disagreement)
    native = native_missing_warning()  # ready, but slow: say so where operators look
    refused = store_state.refused_reload(worker.process)
    warnings = [native] if native else []
    if refused:
        warnings.append(f"{REFUSED}: {refused[0]}")
    workers, loaded = lifecycle.workers_loaded(worker)
    return HealthResponse(
        status="ready",
        tokenizers=len(registry),
        engine="python" if native else "native",
        warnings=warnings or None,
        workers=workers,
        workers_loaded=loaded,
        store_sha256=registry.store_sha256 or None,
        failures=refused or None,
    )


ROUTES = [healthz, readyz]
