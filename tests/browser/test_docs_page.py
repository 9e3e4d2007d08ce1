"""The API docs page renders offline in real Chromium, from a real server, asking only it."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import httpx
from playwright.sync_api import ConsoleMessage, Page, Request

from tests.serverproc import Server

SCREENSHOT = os.environ.get("TOKSVC_DOCS_SCREENSHOT")  # a path: save the rendered page there


def operations(base: str) -> list[tuple[str, str]]:
    schema = httpx.get(f"{base}/schema/openapi.json", timeout=10).json()
    return [(method, path) for path, item in schema["paths"].items() for method in item]


def test_docs_page_renders_every_operation_asking_only_the_server(
    server: Server, page: Page
) -> None:
    requests: list[str] = []
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(f"console: {message.text}")

    def on_failed(request: Request) -> None:
        errors.append(f"request failed: {request.url} {request.failure}")

    page.on("request", lambda request: requests.append(request.url))
    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    page.on("requestfailed", on_failed)

    page.goto(f"{server.base}/schema", wait_until="networkidle")
    expected = operations(server.base)
    assert len(expected) >= 8, expected
    for method, path in expected:
        summary = page.locator(f".opblock-{method} .opblock-summary-path[data-path='{path}']")
        summary.wait_for(state="visible")
        assert summary.inner_text().replace("\u200b", "") == path
    assert page.locator(".opblock").count() == len(expected)
    if SCREENSHOT:
        page.screenshot(path=SCREENSHOT, full_page=True)

    assert {urlsplit(url).hostname for url in requests} == {"127.0.0.1"}, requests
    assert not errors, errors
