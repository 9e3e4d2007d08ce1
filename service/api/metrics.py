"""Prometheus metrics. With several uvicorn workers, `toksvc serve` points PROMETHEUS_MULTIPROC_DIR
at a fresh directory before any worker starts, and `/metrics` sums all workers' files."""

from __future__ import annotations

import time
from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

from litestar import Response, get
from litestar.enums import ScopeType
from litestar.plugins.prometheus import PrometheusController
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import Counter, Gauge, Histogram

from service.api import traits
from service.bpe.engine import native
from service.store.registry import LoadedTokenizer, Registry

TOKENS = Counter(
    "toksvc_tokens_total", "Tokens encoded, counted or decoded", ["tokenizer", "operation"]
)
TEXT_BYTES = Counter(
    "toksvc_text_bytes_total",
    "UTF-8 bytes of text encoded, counted or produced by decoding",
    ["tokenizer", "operation"],
)
ACTIVE_STREAMS = Gauge(
    "toksvc_active_streams", "Open decode streams", ["kind"], multiprocess_mode="livesum"
)
TOKENIZER_INFO = Gauge(
    "toksvc_tokenizer_info",
    "One series per loaded tokenizer (value 1)",
    ["name", "version", "sha256", "default"],
    multiprocess_mode="max",
)
STORE_LOAD_FAILURES = Gauge(
    "toksvc_store_load_failures",
    "Store files that failed to load (hash, parse or validation) at the last load",
    multiprocess_mode="max",
)
RELOADS = Counter("toksvc_store_reloads", "Store reloads by result (ok, refused)", ["result"])
STORE_LOADED = Gauge(
    "toksvc_store_loaded", "1 when the registry is loaded and serving", multiprocess_mode="min"
)
PIECE_CACHE_EVENTS = Counter(
    "toksvc_piece_cache_lookups",
    "Native piece cache look-ups by result (hit, miss; busy: a bucket another thread held)",
    ["result"],
)
PIECE_CACHE_BYTES = Gauge(
    "toksvc_piece_cache_capacity_bytes",
    "Bytes of the native piece cache",
    multiprocess_mode="livesum",
)
PIECE_CACHE_ENTRIES = Gauge(
    "toksvc_piece_cache_entries",
    "Pieces held by the native piece cache",
    multiprocess_mode="livesum",
)
HOT_PIECES_EVENTS = Counter(
    "toksvc_hot_pieces_lookups",
    "Look-ups in the native engines' tables of hot pieces by result (hit, miss)",
    ["result"],
)
HOT_PIECES_BYTES = Gauge(
    "toksvc_hot_pieces_bytes",
    "Bytes held by the native engines' tables of hot pieces (one per tokenizer in use)",
    multiprocess_mode="livesum",
)
_piece_cache_seen = {"hits": 0, "misses": 0, "busy": 0, "at": 0.0}
_hot_seen = {"hits": 0, "misses": 0}


def publish_piece_cache(now: float | None = None) -> None:
    """Copy the native piece cache's and hot pieces' counters into this worker's metrics (the
    deltas since the last copy). Run on every scrape and, at most once a second, after a request."""
    stats = native.piece_cache_stats()
    _piece_cache_seen["at"] = time.monotonic() if now is None else now
    for key, result in (("hits", "hit"), ("misses", "miss"), ("busy", "busy")):
        delta = stats[key] - int(_piece_cache_seen[key])
        if delta > 0:
            PIECE_CACHE_EVENTS.labels(result).inc(delta)
        _piece_cache_seen[key] = stats[key]
    PIECE_CACHE_BYTES.set(stats["capacity_bytes"])
    PIECE_CACHE_ENTRIES.set(stats["entries"])
    hot = native.hot_pieces_stats()
    for key, result in (("hits", "hit"), ("misses", "miss")):
        if (delta := hot[key] - _hot_seen[key]) > 0:
            HOT_PIECES_EVENTS.labels(result).inc(delta)
        _hot_seen[key] = hot[key]
    HOT_PIECES_BYTES.set(hot["held_bytes"])


_TOKEN_CHILDREN: dict[tuple[str, str], tuple[Any, Any]] = {}  # (tokenizer, operation) -> counters


def record(tokenizer: str, operation: str, tokens: int, texts: Iterable[str | bytes]) -> None:
    """Count the tokens and the UTF-8 bytes of the texts (or raw bytes) an operation handled.
    The label children are looked up once per pair (a `labels()` call costs ~1.5 us)."""
    if (pair := _TOKEN_CHILDREN.get((tokenizer, operation))) is None:
        pair = _TOKEN_CHILDREN[(tokenizer, operation)] = (
            TOKENS.labels(tokenizer, operation),
            TEXT_BYTES.labels(tokenizer, operation),
        )
    pair[0].inc(tokens)
    pair[1].inc(
        sum(
            len(t) if isinstance(t, bytes) else len(t.encode("utf-8", "surrogatepass"))
            for t in texts
        )
    )
    if (now := time.monotonic()) - _piece_cache_seen["at"] >= 1.0:
        publish_piece_cache(now)


def publish_registry(registry: Registry, previous: Registry | None = None) -> None:
    """One series per loaded tokenizer; those a reload removed drop to 0 (multiprocess files
    cannot forget a series, so "0" means "no longer loaded")."""
    now = {_info_labels(t) for t in registry}
    for labels in {_info_labels(t) for t in previous or ()} - now:
        TOKENIZER_INFO.labels(*labels).set(0)
    for labels in now:
        TOKENIZER_INFO.labels(*labels).set(1)
    STORE_LOAD_FAILURES.set(len(registry.failures))
    STORE_LOADED.set(1 if len(registry) else 0)


def _info_labels(t: LoadedTokenizer) -> tuple[str, str, str, str]:
    return t.name, t.version, t.sha256, str(t.is_default).lower()


REQUESTS = Counter(
    "toksvc_requests_total", "HTTP requests", ["method", "route", "operation", "status"]
)
LATENCY = Histogram(
    "toksvc_request_duration_seconds",
    "Time from the request to the end of the response (streams: the whole stream)",
    ["route", "operation"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


class RequestMetrics:
    """ASGI middleware: requests by route template, operation and status, and a latency histogram.

    A leaner stand-in for Litestar's Prometheus plugin, which measured at ~60 us a request in
    multiprocess mode (a constant endpoint fell from 12,200 to 6,900 req/s): label children are
    looked up once per label set and each request costs three sample writes.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._children: dict[tuple[str, str, str, int], tuple[Any, Any]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_and_see(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_see)
        finally:
            self._observe(scope, status, time.perf_counter() - start)

    def _observe(self, scope: Scope, status: int, seconds: float) -> None:
        handler = scope.get("route_handler")
        route = scope.get("path_template")
        if handler is None or route is None or route == "/metrics":
            return
        method = str(scope.get("method", "GET"))
        key = (method, route, str(handler.opt.get("operation", "other")), status)
        if (pair := self._children.get(key)) is None:
            method, route, operation, _ = key
            pair = self._children[key] = (
                REQUESTS.labels(method, route, operation, str(status)),
                LATENCY.labels(route, operation),
            )
        pair[0].inc()
        pair[1].observe(seconds)


class MetricsController(PrometheusController):
    path = "/metrics"
    opt = MappingProxyType({traits.AUTH_EXEMPT: True})  # Prometheus scrapes without a key
    include_in_schema = False  # Prometheus text format, not part of the JSON API
    openmetrics_format = False

    @get()
    async def get(self) -> Response[bytes]:
        publish_piece_cache()  # this worker's figures are fresh; the others' at most a second old
        return await super().get.fn(self)  # type: ignore[no-any-return]
