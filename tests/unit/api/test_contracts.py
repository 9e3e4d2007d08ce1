"""The internals of uvicorn and Litestar that service/api relies on, one test each (issue 23).

pyproject.toml bounds both packages to the versions these pass on. Before raising a bound, run
this file against the new version: a failure names the internal that changed and the module of
ours that uses it, instead of a worker that misbehaves in production.
"""

from __future__ import annotations

import inspect
import re
import signal
import threading
import tomllib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar, get
from litestar.dto import AbstractDTO
from litestar.handlers import BaseRouteHandler, HTTPRouteHandler
from litestar.params import FromPath
from litestar.testing import TestClient
from litestar.types import ASGIApp, Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.server import Server

from service.api.bodies import StrictBody


def versions() -> str:
    return f"uvicorn {metadata.version('uvicorn')}, litestar {metadata.version('litestar')}"


def require(condition: bool, internal: str, used_by: str) -> None:
    assert condition, f"{versions()}: {internal} changed or is gone; {used_by} relies on it"


def defines(cls: type, name: str) -> bool:
    """`name` is defined by `cls` or one of its bases other than object/asyncio's protocols."""
    return any(name in vars(base) for base in cls.__mro__ if base.__module__.startswith("uvicorn"))


# --- uvicorn -----------------------------------------------------------------------------------


def test_worker_process_healthcheck_says_dead_starting_or_ready() -> None:
    """service.api.process.supervisor: `Process._healthcheck(timeout)` is None when the worker does
    not
    answer, else the worker's `server.started`; plus start/terminate/kill/join/pid/exitcode."""
    from uvicorn.supervisors.multiprocess import Process  # noqa: PLC0415

    for name in ("start", "terminate", "kill", "join", "pong", "_healthcheck"):
        require(callable(getattr(Process, name, None)), f"Process.{name}", "supervisor.py")
    for name in ("pid", "exitcode", "server"):
        require(
            isinstance(getattr(Process, name, None), property), f"Process.{name}", "supervisor.py"
        )
    process = Process(Config(app="service.api.app:create_app"), [])
    require(
        hasattr(process.process, "is_alive"),
        "Process.process (a multiprocessing process)",
        "supervisor._healthcheck",
    )
    try:
        require(
            process._healthcheck(0.05) is None,
            "Process._healthcheck: None if no answer",
            "supervisor.keep_subprocess_alive",
        )
        for started in (False, True):
            process.server.started = started
            answer = threading.Thread(target=process.pong)  # what the worker's thread does
            answer.start()
            result = process._healthcheck(5)
            answer.join()
            require(
                result is started,
                "Process._healthcheck: the worker's started flag",
                "supervisor.keep_subprocess_alive",
            )
    finally:
        process.parent_conn.close()
        process.child_conn.close()


def test_config_binds_the_socket_and_knows_the_healthcheck_timeout() -> None:
    """service.api.process.supervisor: `Config.bind_socket()`, `Config.timeout_worker_healthcheck`
    and
    the start-up failure status 3 (a worker refusing its start exits with it)."""
    from uvicorn.config import STARTUP_FAILURE  # noqa: PLC0415

    from service.api.process.supervisor import STARTUP_FAILURE as OURS  # noqa: PLC0415

    config = Config(app="service.api.app:create_app", workers=2)
    require(callable(getattr(config, "bind_socket", None)), "Config.bind_socket", "supervisor.py")
    require(
        isinstance(getattr(config, "timeout_worker_healthcheck", None), int | float),
        "Config.timeout_worker_healthcheck",
        "supervisor.py",
    )
    require(STARTUP_FAILURE == OURS, "uvicorn.config.STARTUP_FAILURE", "supervisor, lifecycle")


def test_server_signal_handlers_chain_and_re_raise() -> None:
    """service.api.lifecycle.on_signal and server._exit_normally: uvicorn installs its SIGTERM
    handler with signal.signal (so ours can wrap it) and, after a graceful stop, restores the
    previous handler and raises the signal again to it."""
    server = Server(Config(app="service.api.app:create_app"))
    heard: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: heard.append(signum))
    try:
        with server.capture_signals():
            installed = signal.getsignal(signal.SIGTERM)
            require(
                getattr(installed, "__func__", None) is Server.handle_exit,
                "Server.capture_signals installs handle_exit with signal.signal",
                "lifecycle.on_signal",
            )
            server.handle_exit(signal.SIGTERM, None)
        require(
            heard == [signal.SIGTERM],
            "Server.capture_signals re-raises the signal",
            "server._exit_normally",
        )
        require(server.should_exit, "Server.handle_exit sets should_exit", "server.py")
        require(hasattr(server, "started"), "Server.started", "server.serve")
    finally:
        signal.signal(signal.SIGTERM, previous)


HTTP_HOOKS = (
    "data_received",
    "connection_made",
    "connection_lost",
    "on_message_begin",
    "on_url",
    "on_header",
    "on_headers_complete",
    "send_400_response",
    "pause_writing",
    "resume_writing",
)


def test_the_http_protocol_has_the_hooks_the_guard_overrides() -> None:
    """service.api.connection.GuardedHttpProtocol overrides these methods of uvicorn's httptools
    protocol and reads `transport`, `loop` and `client`; a parser error raised by a callback
    must reach `send_400_response` (the header limit raises one)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415

    for name in HTTP_HOOKS:
        require(defines(HttpToolsProtocol, name), f"HttpToolsProtocol.{name}", "connection.py")
    setup = inspect.getsource(HttpToolsProtocol.__init__)
    setup += inspect.getsource(HttpToolsProtocol.connection_made)
    for name in ("self.transport", "self.loop", "self.client"):
        require(name in setup, f"HttpToolsProtocol {name}", "connection.py")
    feed = inspect.getsource(HttpToolsProtocol.data_received)
    require(
        "HttpParserError" in feed and "send_400_response" in feed,
        "HttpToolsProtocol.data_received: a parser error answers send_400_response",
        "connection.GuardedHttpProtocol._count_head",
    )


def test_the_websocket_protocol_has_the_flow_control_hooks() -> None:
    """service.api.connection.GuardedWebSocketProtocol: the write deadline wraps these."""
    from uvicorn.protocols.websockets.websockets_sansio_impl import (  # noqa: PLC0415
        WebSocketsSansIOProtocol,
    )

    for name in ("pause_writing", "resume_writing", "connection_lost", "connection_made"):
        require(
            defines(WebSocketsSansIOProtocol, name),
            f"WebSocketsSansIOProtocol.{name}",
            "connection.py",
        )


# --- Litestar ----------------------------------------------------------------------------------


def test_the_struct_schema_plugin_can_be_extended() -> None:
    """service.api.openapi.StrictStructSchemaPlugin subclasses a private Litestar class."""
    from litestar._openapi.schema_generation import SchemaCreator  # noqa: PLC0415, F401
    from litestar._openapi.schema_generation.plugins.struct import (  # noqa: PLC0415
        StructSchemaPlugin,
    )

    params = list(inspect.signature(StructSchemaPlugin.to_openapi_schema).parameters)
    require(
        params == ["self", "field_definition", "schema_creator"],
        "StructSchemaPlugin.to_openapi_schema(field_definition, schema_creator)",
        "openapi.StrictStructSchemaPlugin",
    )


def test_the_dto_hooks_strict_body_implements() -> None:
    """service.api.bodies.StrictBody: every abstract method of AbstractDTO is implemented,
    `create_for_field_definition` is given the handler id, and a DTO sees its connection."""
    hooks = {
        name
        for name, value in vars(StrictBody).items()
        if not name.startswith("__") and callable(getattr(value, "__func__", value))
    }
    unknown = sorted(hooks - set(vars(AbstractDTO)))
    require(not unknown, f"AbstractDTO.{unknown} (overridden by StrictBody)", "wire/bodies")
    abstract = {
        name
        for name, value in vars(AbstractDTO).items()
        if getattr(getattr(value, "__func__", value), "__isabstractmethod__", False)
    }
    missing = sorted(abstract - hooks)
    require(not missing, f"AbstractDTO's abstract methods {missing}", "wire/bodies.StrictBody")
    params = inspect.signature(AbstractDTO.create_for_field_definition).parameters
    require(
        list(params)[:2] == ["field_definition", "handler_id"],
        "AbstractDTO.create_for_field_definition(field_definition, handler_id, ...)",
        "wire/bodies.StrictBody",
    )
    require(
        "asgi_connection" in inspect.getsource(AbstractDTO.__init__),
        "AbstractDTO.asgi_connection",
        "wire/bodies.StrictBody.decode_bytes",
    )


def test_a_middleware_sees_the_route_handler_and_the_app_in_its_scope() -> None:
    """service.api (hot_path, metrics, wire/bodies): scope["route_handler"] (its `handler_id`,
    `opt`, `resolve_request_max_body_size()`), scope["litestar_app"] and scope["path_params"]
    are set before a route's middleware runs."""
    seen: dict[str, Any] = {}

    def record(app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            seen.update(
                handler=scope.get("route_handler"),
                app=scope.get("litestar_app"),
                params=scope.get("path_params"),
            )
            await app(scope, receive, send)

        return middleware

    @get("/t/{ref:str}", opt={"operation": "probe"}, middleware=[record], sync_to_thread=False)
    def handler(ref: FromPath[str]) -> str:
        return ref

    app = Litestar([handler])
    with TestClient(app) as client:
        assert client.get("/t/abc").text == "abc"
    route: Callable[..., Any] | None = seen.get("handler")
    require(isinstance(route, HTTPRouteHandler), 'scope["route_handler"]', "hot_path, metrics")
    assert isinstance(route, BaseRouteHandler)
    require(isinstance(route.handler_id, str), "BaseRouteHandler.handler_id", "wire/bodies")
    require(route.opt.get("operation") == "probe", "BaseRouteHandler.opt", "metrics")
    require(
        callable(getattr(route, "resolve_request_max_body_size", None)),
        "HTTPRouteHandler.resolve_request_max_body_size",
        "routes/hot_path",
    )
    require(seen["app"] is app, 'scope["litestar_app"]', "routes/hot_path")
    require(seen["params"] == {"ref": "abc"}, 'scope["path_params"]', "routes/hot_path")


def as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


@pytest.mark.parametrize("package", ["uvicorn", "litestar"])
def test_the_installed_versions_are_within_the_bounds(package: str) -> None:
    """pyproject.toml's bounds (`>=low,<high`) are the versions this file passed on: an install
    outside them (pip --no-deps, a constraints file) is named here first."""
    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    [spec] = [d for d in deps if re.match(rf"{package}(\[\w+\])?[<>=]", d)]
    low, high = re.fullmatch(r"[\w\[\]]+>=([\d.]+),<([\d.]+)", spec).groups()  # type: ignore[union-attr]
    installed = metadata.version(package)
    require(
        as_tuple(low) <= as_tuple(installed) < as_tuple(high),
        f"{package} {installed} outside {spec}",
        "pyproject.toml's bound",
    )
