"""What every page and static file the service serves carries: a Content-Security-Policy that
allows nothing from another origin and no framing, `X-Content-Type-Options: nosniff`, and a 404
problem (not a 500) for a file path the file system cannot even look up (a NUL byte).

The pages are the playground and the API docs; the docs page (Swagger UI, rendered by Litestar)
has one inline script (the spec and the UI's options) and one inline style, so its policy allows
exactly those by their sha256 (`page_policy`), computed from the page it sends.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from litestar import Request, Response, Router
from litestar.datastructures import CacheControlHeader
from litestar.exceptions import NotFoundException
from litestar.response.base import ASGIResponse
from litestar.static_files import create_static_files_router

R = TypeVar("R", Response[Any], ASGIResponse)
NOSNIFF = "nosniff"
_POLICY = {
    "default-src": "'none'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "connect-src": "'self'",
    "base-uri": "'none'",
    "form-action": "'none'",
    "frame-ancestors": "'none'",
}
_INLINE = re.compile(rb"<(script|style)(?:\s[^>]*)?>(.*?)</\1>", re.DOTALL | re.IGNORECASE)


def policy(inline: dict[str, list[str]] | None = None) -> str:
    """The Content-Security-Policy, with the sha256 sources of inline scripts and styles."""
    extra = inline or {}
    return "; ".join(
        " ".join([f"{name} {value}", *(f"'{s}'" for s in extra.get(name, []))])
        for name, value in _POLICY.items()
    )


CSP = policy()  # a page with no inline script or style


def page_policy(html: bytes) -> str:
    """The policy of an HTML page: its own inline `<script>` and `<style>` blocks allowed."""
    inline: dict[str, list[str]] = {}
    for tag, body in _INLINE.findall(html):
        if body.strip():
            digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
            inline.setdefault(f"{tag.decode().lower()}-src", []).append(f"sha256-{digest}")
    return policy(inline)


def protect(response: R) -> R:
    """The policy and nosniff on an answer (an HTML page's own inline blocks allowed)."""
    csp = CSP
    if isinstance(response, Response) and str(response.media_type).startswith("text/html"):
        csp = page_policy(response.content) if isinstance(response.content, bytes) else CSP
    response.headers["Content-Security-Policy"] = csp
    response.headers["X-Content-Type-Options"] = NOSNIFF
    return response


async def _protect(response: Any) -> Any:
    """`after_request` of static files (async: Litestar runs a sync hook in a thread); they
    answer with an `ASGIFileResponse`, which the hook's declared type does not admit."""
    return protect(response)


async def refuse_nul(request: Request[Any, Any, Any]) -> None:
    """`before_request`: a path with a NUL byte names no file (the OS refuses to look it up)."""
    if "\x00" in request.scope["path"]:
        raise NotFoundException("no such file: the path contains a NUL byte")


def static_files(
    path: str,
    directories: Sequence[Path],
    *,
    name: str,
    cache_control: CacheControlHeader,
    **opts: Any,
) -> Router:
    """A static-file router under `path`, protected as above."""
    return create_static_files_router(
        path,
        directories=list(directories),
        name=name,
        cache_control=cache_control,
        before_request=refuse_nul,
        after_request=_protect,
        **opts,
    )
