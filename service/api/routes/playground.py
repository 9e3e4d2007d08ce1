"""The playground page: static HTML/CSS/JS from the package, served at /playground.

`GET /` redirects there. The page talks to the service's own API only; it and its files carry the
Content-Security-Policy of `routes.pages`, which allows nothing from another origin.
`TOKSVC_PLAYGROUND=0` turns the page, the redirect and the page's helper routes
(`/v1/playground/*`) off.
"""

from __future__ import annotations

from pathlib import Path

from litestar import get
from litestar.datastructures import CacheControlHeader
from litestar.handlers import BaseRouteHandler
from litestar.response import File, Redirect
from litestar.router import Router

from service.api.routes import explain, pages
from service.settings import Settings

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "playground"


@get("/", include_in_schema=False, opt={"operation": "playground"}, sync_to_thread=False)
def root() -> Redirect:
    return Redirect("/playground")


@get("/playground", include_in_schema=False, opt={"operation": "playground"}, sync_to_thread=False)
def page() -> File:
    return File(
        ASSETS / "index.html",
        content_disposition_type="inline",
        media_type="text/html",
        headers={"Content-Security-Policy": pages.CSP, "X-Content-Type-Options": pages.NOSNIFF},
    )


def handlers(settings: Settings) -> list[BaseRouteHandler | Router]:
    """The route handlers to register: none when the playground is off."""
    if not settings.playground:
        return []
    assets = pages.static_files(
        "/playground/assets",
        [ASSETS],
        name="playground-assets",
        cache_control=CacheControlHeader(no_cache=True),
        opt={"operation": "playground"},
    )
    return [root, page, assets, *explain.PLAYGROUND_ROUTES]
