"""Real headless Chromium for page tests: Debian's `chromium`, driven by Playwright for Python.

Playwright's own browser download is not used; the `chromium` executable on PATH is. Without it,
every browser test fails (never skips) and says how to install it. `pg` is the playground page
opened against the session's real server, checked after each test for off-host requests and
console errors.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.server import Server

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="package")
def chromium_browser() -> Iterator[Browser]:
    """One headless Chromium for the browser tests; Playwright's sync API keeps an event loop
    running in the main thread while it lives, so it ends with them (tests after them may use
    `asyncio.run`)."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail(
            "no `chromium` on PATH: the browser tests need Debian's chromium "
            "(`apt-get install -y chromium`)",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium_browser: Browser) -> Iterator[Page]:
    """A fresh context (no shared cookies or cache) and page per test, 1440 x 1000."""
    context = chromium_browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


@dataclass
class Watched:
    """The open playground, what it requested and what its console logged."""

    page: Page
    base: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # API problem statuses a test provokes on purpose (Chromium logs each as a console error)
    expected_statuses: set[int] = field(default_factory=set)

    def api(self, path: str, body: dict[str, Any]) -> Any:
        response = httpx.post(f"{self.base}{path}", json=body, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def problem(self, path: str, body: dict[str, Any], status: int) -> dict[str, Any]:
        """POST `body` to `path`, expecting a problem document with `status`."""
        response = httpx.post(f"{self.base}{path}", json=body, timeout=30)
        assert response.status_code == status, response.text
        doc: dict[str, Any] = response.json()
        return doc


@pytest.fixture
def pg(page: Page, server: Server) -> Iterator[Watched]:
    """The playground, opened through `GET /` (which redirects), with requests and console
    errors recorded; after the test, every request went to the server and no error was logged."""
    w = Watched(page, server.base)
    page.on("request", lambda r: w.requests.append(r.url))
    page.on("console", lambda m: w.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    page.goto(f"{server.base}/")
    assert urlsplit(page.url).path == "/playground"
    expect(page.locator("#count-tokens")).not_to_have_text("\u2013")  # no count yet: a dash
    yield w
    hosts = {urlsplit(u).netloc for u in w.requests if not u.startswith("data:")}
    assert hosts == {f"127.0.0.1:{server.port}"}, w.requests
    expected = tuple(f"the server responded with a status of {s} " for s in w.expected_statuses)
    assert [e for e in w.errors if not (expected and any(x in e for x in expected))] == []
