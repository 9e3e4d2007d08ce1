"""Liveness and readiness, for load balancers and orchestrators."""

from __future__ import annotations

from litestar import get

from service.api import problems
from service.api.dependencies import WorkerDep
from service.api.wire import HealthResponse
from service.errors import NotReadyError
from service.store.engines import native_missing_warning


@get("/healthz", opt={"operation": "health"}, sync_to_thread=False, tags=["probes"],
     summary="Liveness", description="200 while the process runs, even while the store loads.",
     response_description="alive")  # fmt: skip
def healthz() -> HealthResponse:
    return HealthResponse(status="ok")


@get("/readyz", opt={"operation": "health"}, sync_to_thread=False,
     responses=problems.documented(503), tags=["probes"], summary="Readiness",
     description="200 once the store is loaded and this worker serves; 503 (problem, with "
     "`Retry-After` and the files that failed) before that.",
     response_description="ready to serve")  # fmt: skip
def readyz(worker: WorkerDep) -> HealthResponse:
    """Ready only when every file of every store loaded: a replica that serves part of the store
    must not take traffic beside replicas that serve all of it (during a rollout, say)."""
    registry = worker.registry
    if registry is None or not registry.complete:
        failures = [str(f) for f in registry.failures] if registry is not None else []
        serving = registry is not None and len(registry) > 0
        raise NotReadyError(failures, serving=serving)
    warning = native_missing_warning()  # ready, but slow: say so where operators look
    return HealthResponse(status="ready", tokenizers=len(registry),
                          engine="python" if warning else "native",
                          warnings=[warning] if warning else None)  # fmt: skip


ROUTES = [healthz, readyz]
