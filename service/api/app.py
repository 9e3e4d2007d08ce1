"""The Litestar application: lifespan loads the registry, `app.state` carries it to handlers."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin, SwaggerRenderPlugin

import service
from service.api import metrics, models, problems, reload, textops
from service.api.openapi import StrictStructSchemaPlugin
from service.api.routes import ROUTES
from service.api.streaming import StreamSlots, decode_stream, decode_ws, watch_stop
from service.settings import Settings
from service.store.registry import Registry

log = logging.getLogger("toksvc")


def create_app(settings: Settings | None = None, registry: Registry | None = None) -> Litestar:
    """Build the app. Without a registry, start-up loads the store (in a thread) before the worker
    accepts a connection, so a worker that (re)starts never answers before it can serve; if no
    tokenizer loads, `/readyz` and the API answer 503, and in strict mode the worker exits."""
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if app.state.registry is None:
            app.state.registry = await reload.initial_load(settings)
            reload.on_sighup(app.state)
        watch_stop(app.state)
        yield

    state = State({"settings": settings, "registry": registry,
                   "stream_slots": StreamSlots(settings.max_streams_per_worker)})  # fmt: skip
    if registry is not None:
        metrics.publish_registry(registry)
    return Litestar(
        route_handlers=[
            *ROUTES,
            *models.ROUTES,
            *textops.ROUTES,
            decode_stream,
            decode_ws,
            reload.admin_reload,
            metrics.MetricsController,
        ],
        state=state,
        lifespan=[lifespan],
        exception_handlers=problems.EXCEPTION_HANDLERS,
        plugins=[StrictStructSchemaPlugin()],
        middleware=[metrics.RequestMetrics],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="toksvc",
            version=service.__version__,
            description="Exact BPE token ids, counts, decoding and streaming decode.",
            path="/schema",
            render_plugins=[ScalarRenderPlugin(), SwaggerRenderPlugin(path="/swagger")],
        ),
    )
