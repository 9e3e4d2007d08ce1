"""What a route declares about itself, in its handler's `opt`, for the middlewares to read.

Middlewares act on these traits, never on path strings, so a new route gets the right budget and
access rule by saying what it is:

- `LARGE_BODY`: the route reads a JSON body of up to TOKSVC_MAX_BODY_BYTES and works on it; it is
  counted against the worker's request budget (`service.api.budget.RequestBudget`). Every
  `json_post` route has it.
- `STREAMING`: a long-lived stream with its own slots and per-message budget (NDJSON, WebSocket).
- `AUTH_EXEMPT`: open without an API key (the probes, `/metrics`, `/admin/reload` with its token).
"""

from __future__ import annotations

from typing import Any

LARGE_BODY = "large_body"
STREAMING = "streaming"
AUTH_EXEMPT = "auth_exempt"


def has(handler: Any, trait: str) -> bool:
    """Whether a route handler (a scope's `route_handler`) declares `trait`."""
    opt = getattr(handler, "opt", None)
    return bool(opt and opt.get(trait))
