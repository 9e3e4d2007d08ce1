"""The Litestar application: its lifespan is the worker's life (`service.api.lifecycle`), and
`app.state` carries the typed `Worker` to handlers."""

from __future__ import annotations

import logging

from litestar import Litestar
from litestar.datastructures import State
from litestar.types import Middleware

from service.api import access_log, auth, cors, head_requests, lifecycle, metrics, problems
from service.api.bodies import BodyRequest, StrictBodies
from service.api.budget import RequestBudget
from service.api.dependencies import SIGNATURE_TYPES, dependencies
from service.api.openapi import StrictStructSchemaPlugin
from service.api.process.handoff import Handoff, received
from service.api.routes import (
    admin,
    catalog,
    decoding,
    docs,
    encoding,
    explain,
    models,
    playground,
    probes,
    providers,
    textops,
)
from service.api.routes.hot_path import served_fast
from service.api.routes.streams.ndjson import decode_stream
from service.api.routes.streams.websocket import decode_ws
from service.api.worker import KEY, Worker
from service.settings import Settings
from service.store.registry import Registry

log = logging.getLogger("toksvc")


def create_app(
    settings: Settings | None = None, registry: Registry | None = None, *, hot_path: bool = True
) -> Litestar:
    """Build the app. Without a registry, start-up loads the store (in a thread) before the worker
    accepts a connection, so a worker that (re)starts never answers before it can serve; if no
    tokenizer loads, the worker does not start; if some files fail, `/readyz` answers 503 (and in
    strict mode the worker exits). `hot_path=False` leaves encode and count to their handlers
    alone (`service.api.routes.hot_path`; the tests compare both)."""
    handoff = received() if settings is None else Handoff(settings=settings)
    settings = handoff.settings
    worker = Worker(settings, registry, process=handoff.process)
    if registry is not None:
        metrics.publish_registry(registry)
    app = Litestar(
        route_handlers=[
            *catalog.ROUTES,
            *probes.ROUTES,
            *([served_fast(encoding.ROUTES)] if hot_path else encoding.ROUTES),
            *decoding.ROUTES,
            *models.ROUTES,
            *providers.ROUTES,
            *textops.ROUTES,
            decode_stream,
            decode_ws,
            admin.admin_reload,
            metrics.MetricsController,
            docs.assets_router(),
            *explain.ROUTES,
            *playground.handlers(settings),
        ],
        state=State({KEY: worker}),
        dependencies=dependencies(worker),
        signature_types=SIGNATURE_TYPES,
        lifespan=[lifecycle.running],
        exception_handlers=problems.EXCEPTION_HANDLERS,
        plugins=[StrictStructSchemaPlugin(), StrictBodies()],
        request_class=BodyRequest,
        middleware=[
            metrics.RequestMetrics,
            *_access(settings),
            RequestBudget(),
        ],
        cors_config=cors.config(settings),
        request_max_body_size=settings.max_body_bytes,
        openapi_config=docs.openapi_config(),
    )
    app = cors.refusals_as_problems(head_requests.answered_as_get(app))
    access_log.configure(settings)
    app.asgi_handler = access_log.AccessLog(app.asgi_handler, settings)  # outermost: sees all
    return app


def _access(settings: Settings) -> list[Middleware]:
    """API keys, if any are configured (off by default; `service.api.auth`)."""
    keys = auth.load_keys(settings)
    return [auth.ApiKeys(keys)] if keys else []
