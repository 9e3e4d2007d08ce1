"""Prometheus metrics. With several uvicorn workers, `toksvc serve` points PROMETHEUS_MULTIPROC_DIR
at a fresh directory before any worker starts, and `/metrics` sums all workers' files."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from litestar import Request
from litestar.plugins.prometheus import PrometheusConfig, PrometheusController
from prometheus_client import Counter, Gauge

from service.store.registry import Registry

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
STORE_LOADED = Gauge(
    "toksvc_store_loaded", "1 when the registry is loaded and serving", multiprocess_mode="min"
)


def record(tokenizer: str, operation: str, tokens: int, texts: Iterable[str | bytes]) -> None:
    """Count the tokens and the UTF-8 bytes of the texts (or raw bytes) an operation handled."""
    TOKENS.labels(tokenizer, operation).inc(tokens)
    TEXT_BYTES.labels(tokenizer, operation).inc(
        sum(
            len(t) if isinstance(t, bytes) else len(t.encode("utf-8", "surrogatepass"))
            for t in texts
        )
    )


def publish_registry(registry: Registry) -> None:
    for t in registry:
        TOKENIZER_INFO.labels(t.name, t.version, t.sha256, str(t.is_default).lower()).set(1)
    STORE_LOAD_FAILURES.set(len(registry.failures))
    STORE_LOADED.set(1 if len(registry) else 0)


def _operation(request: Request[Any, Any, Any]) -> str:
    handler = request.scope.get("route_handler")
    return str(handler.opt.get("operation", "other")) if handler is not None else "other"


def prometheus_config() -> PrometheusConfig:
    """Requests by route template, operation and status, with a latency histogram."""
    return PrometheusConfig(
        app_name="toksvc",
        prefix="toksvc",
        group_path=True,
        labels={"operation": _operation},
        exclude=["^/metrics$"],
        exclude_unhandled_paths=True,
        buckets=[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    )


class MetricsController(PrometheusController):
    path = "/metrics"
    openmetrics_format = False
