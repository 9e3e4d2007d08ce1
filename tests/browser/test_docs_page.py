"""The API docs page renders offline in real Chromium, from a real server, asking only it."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import httpx
from playwright.sync_api import ConsoleMessage, Page, Request

from tests.support.server import Server

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
    assert {urlsplit(url).hostname for url in requests} == {"127.0.0.1"}, requests
    expected = operations(server.base)
    assert len(expected) >= 8, expected
    for method, path in expected:
        summary = page.locator(f".opblock-{method} .opblock-summary-path[data-path='{path}']")
        summary.wait_for(state="visible")
        assert summary.inner_text().replace("\u200b", "") == path
    assert page.locator(".opblock").count() == len(expected)
    if SCREENSHOT:
        page.screenshot(path=SCREENSHOT, full_page=True)

    assert {urlsplit(url).hostname for url in requests} == {"127.0.0.1"}, requests  # still
    assert not errors, errors


# a path parameter with examples, and a body with named examples (every body example is sent, in
# process, by tests/unit/api/test_openapi_docs.py; expanding an operation takes the page seconds)
TRY_IT = [("get", "/v1/tokenizers/{ref}"), ("post", "/v1/tokenizers/{ref}/encode")]


def test_try_it_out_sends_the_prefilled_example_and_gets_200(server: Server, page: Page) -> None:
    """In the page, as a person would: expand, "Try it out", "Execute" with the prefilled
    example (`{ref}` and body); the live response is a 200 with the example's answer."""
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{server.base}/schema", wait_until="networkidle")
    assert set(TRY_IT) <= set(operations(server.base))
    for method, path in TRY_IT:
        block = page.locator(f".opblock-{method}").filter(
            has=page.locator(f".opblock-summary-path[data-path='{path}']")
        )
        block.locator(".opblock-summary").click()
        block.locator("button.try-out__btn").click()
        block.locator("button.execute").click()
        response = block.locator(".live-responses-table .response")
        response.locator(".response-col_status").wait_for(state="visible")
        assert response.locator(".response-col_status").inner_text().strip().startswith("200")
        assert '"cl100k_base"' in response.locator(".response-col_description").inner_text()
    assert {urlsplit(url).hostname for url in requests} == {"127.0.0.1"}, requests
