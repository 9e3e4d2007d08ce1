"""The API docs page: OpenAPI settings, tags, and a Swagger UI served from the package (offline).

`/schema` and `/schema/swagger` render Swagger UI from the pinned copy in `assets/swagger-ui/`
(see the README there), served at `/schema/assets/`; the page loads nothing from elsewhere, so it
works in an air-gapped cluster. `/schema/openapi.json` is the document. Every other `/schema/...`
path (Litestar's `redoc`, `elements`, `rapidoc`, Scalar) is a problem+json 404. Every answer
carries the Content-Security-Policy and nosniff of `routes.pages` (the page's one inline script
and style allowed by their hashes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from litestar import Response, Router
from litestar.datastructures import CacheControlHeader
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import Tag

import service
from service.api import problems
from service.api.routes import pages

SCHEMA_PATH = "/schema"
ASSETS_PATH = f"{SCHEMA_PATH}/assets"
ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"
SWAGGER = f"{ASSETS_PATH}/swagger-ui"

DESCRIPTION = """Exact BPE token ids, counts, decoding and streaming decode; chat counts and
cost estimates per model.

A tokenizer reference `{ref}` is a name (its default version, e.g. `cl100k_base`) or
`name@version`; a model `{model}` likewise (e.g. `gpt-4o`, `qwen3`, `gpt-4o@1`) or an alias.
Every encode, count and decode response names the exact vocabulary file that produced it
(`tokenizer`: name, version, sha256). Request bodies are strict: unknown fields and wrong types
are refused with a 400. Every error is an RFC 9457 problem document
(`application/problem+json`); its `type` is listed in the project's docs/api.md.

WebSocket streaming (`/v1/tokenizers/{ref}/decode/ws`) and `/metrics` (Prometheus text) are
described in docs/api.md; OpenAPI does not describe them."""

TAGS = [
    Tag(name="tokenizers", description="The tokenizers this service serves, and their metadata."),
    Tag(name="encode and count", description="Text to token ids, or just their number."),
    Tag(name="decode", description="Token ids back to text (or raw bytes)."),
    Tag(
        name="text budgets",
        description="Fit text to a token budget: truncate it, or split it into chunks.",
    ),
    Tag(
        name="models",
        description="Model profiles (tokenizer, chat format, limits, prices): count a "
        "conversation as the model bills it, and estimate a request's cost.",
    ),
    Tag(
        name="provider-shaped",
        description="The providers' own count routes (Anthropic, OpenAI Responses, vLLM), "
        "computed locally for any model in the store, answered in the provider's shape.",
    ),
    Tag(
        name="streaming",
        description="Decode ids as they are generated, never showing half a character.",
    ),
    Tag(
        name="explain",
        description="BPE merge steps of a short text, and the playground's small vocabularies.",
    ),
    Tag(name="probes", description="Liveness and readiness for orchestrators."),
    Tag(
        name="admin", description="Operations that change what the service serves (off by default)."
    ),
]


async def _problem_not_found(response: Response[Any]) -> Response[Any]:
    """Litestar answers unknown `/schema/...` pages with an HTML 404; make it a problem."""
    if response.status_code != 404:
        return pages.protect(response)
    detail = f"no such documentation page; the API docs are at {SCHEMA_PATH}"
    return pages.protect(problems.response(problems.for_http(404, detail)))


def openapi_config() -> OpenAPIConfig:
    swagger = SwaggerRenderPlugin(
        path=["/", "/swagger"],
        js_url=f"{SWAGGER}/swagger-ui-bundle.js",
        css_url=f"{SWAGGER}/swagger-ui.css",
        standalone_preset_js_url=f"{SWAGGER}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{SWAGGER}/favicon-32x32.png'>",
    )
    router = Router(
        SCHEMA_PATH, route_handlers=[], include_in_schema=False, after_request=_problem_not_found
    )
    return OpenAPIConfig(
        title="toksvc",
        version=service.__version__,
        description=DESCRIPTION,
        tags=TAGS,
        path=SCHEMA_PATH,
        openapi_router=router,
        render_plugins=[swagger],
    )


def assets_router() -> Router:
    """The vendored UI files; their names change with nothing, so caches may keep them a day."""
    return pages.static_files(
        ASSETS_PATH,
        [ASSETS_DIR],
        name="docs-assets",
        cache_control=CacheControlHeader(max_age=86400),
        include_in_schema=False,
    )
