"""Real headless Chromium for page tests: Debian's `chromium`, driven by Playwright for Python.

Playwright's own browser download is not used; the `chromium` executable on PATH is. Without it,
every browser test fails (never skips) and says how to install it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip


@pytest.fixture(scope="session")
def chromium_browser() -> Iterator[Browser]:
    """One headless Chromium for the whole run."""
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
