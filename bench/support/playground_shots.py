"""Screenshots of the playground at 1440 and 360 px (docs/playground-*.png), of its Chat and cost
panel with tools, a tool call and a rendered prompt (docs/playground-chat-1440.png), and its
page weight.

Starts a real `toksvc serve` on 127.0.0.1, opens the page in Debian's `chromium` through Playwright
and prints the bytes transferred on first load (headers + bodies, static files and API calls).

    python -m bench.support.playground_shots    # writes docs/playground-1440.png, -360.png, -chat-1440.png
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from playwright.sync_api import Page, Request, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]

from tests.browser.conftest import CHROMIUM_ARGS  # noqa: E402
from tests.support.server import start_server, stop_server  # noqa: E402


def first_load(page: Page, url: str) -> dict[str, int]:
    """Open `url`, wait until every panel has its data, and sum the bytes of every request."""
    done: list[Request] = []
    page.on("requestfinished", lambda r: done.append(r))  # noqa: PLW0108 (a bound method fails)
    page.goto(url)
    expect(page.locator("#count-tokens")).not_to_have_text("\u2013")
    expect(page.locator("#compare-table tbody tr")).to_have_count(4)
    expect(page.locator("#st-lanes .lane")).to_have_count(1)
    expect(page.locator("#ch-cost-total")).not_to_have_text("\u2013")
    page.wait_for_load_state("networkidle")
    weight = {"requests": 0, "static": 0, "api": 0}
    for r in done:
        sizes = r.sizes()
        n = sizes["responseBodySize"] + sizes["responseHeadersSize"] + sizes["requestHeadersSize"]
        n += sizes["requestBodySize"]
        weight["requests"] += 1
        weight["api" if "/v1/" in r.url else "static"] += n
    return weight


def shrink(path: Path) -> None:
    """Screenshots are flat UI colors: a 128-color palette keeps them sharp at a third the size."""
    from PIL import Image  # Pillow comes with matplotlib, in the bench extra

    with Image.open(path) as image:
        flat = image.convert("RGB").quantize(
            128, Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
    flat.save(path, optimize=True)


def stage(page: Page) -> None:
    """Put every panel in a state worth showing: a stepped merge, a half-fed stream."""
    expect(page.locator("#compare-table tbody tr")).to_have_count(4)
    page.locator("#st-text").fill("Hello world, lowest newer")
    expect(page.locator("#st-lanes")).to_have_attribute("data-text", "Hello world, lowest newer")
    for k in range(1, 13):
        page.locator("#st-next").click()
        expect(page.locator("#st-pos")).to_have_text(re.compile(f"^{k} / "))
    page.locator("#text").fill("Tokens, counted exactly: naïve café, 中文, and I 🦜 parrots!")
    expect(page.locator("#spans .tok").first).to_be_visible()
    expect(page.locator("#ids")).to_have_value(re.compile(r"\b11410\b"))
    page.locator("#sm-use").click()
    ids = page.locator("#sm-ids").input_value().split(", ")
    target = next(i for i, x in enumerate(ids) if x == "11410")  # " \xf0\x9f": holds bytes back
    for k in range(1, target + 2):
        page.locator("#sm-step").click()
        expect(page.locator("#sm-progress")).to_have_text(f"fed {k} of {len(ids)} ids")
    expect(page.locator("#sm-held")).to_be_visible()
    page.locator("#ch-outset").check()
    page.locator("#ch-outn").fill("800")
    expect(page.locator("#ch-outtok")).to_have_text("800")
    page.locator("#spans .tok").nth(3).hover()


CALL = {
    "id": "call_w1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def stage_chat(page: Page) -> None:
    """The chat panel on a model with a Jinja template, the tools offered, an assistant's tool
    call and its result, the rendered prompt open."""
    page.locator("#ch-model").select_option("qwen3@1")
    expect(page.locator("#ch-noprice")).to_be_visible()
    page.locator("#ch-tools-on").check()
    page.locator("#ch-content-1").fill("What is the weather in Paris right now?")
    page.locator("#ch-content-2").fill("")
    page.locator("#ch-calls-2").fill(json.dumps([CALL]))
    page.locator("#ch-add").click()
    page.locator("#ch-content-3").fill('{"temp_c": 18, "sky": "clear"}')
    page.locator("#ch-add").click()
    page.locator("#ch-content-4").fill("It is 18 °C and clear in Paris.")
    expect(page.locator("#ch-tokens-4")).to_have_attribute("data-tokens", re.compile(r"^\d+$"))
    expect(page.locator("#ch-tools-tokens")).to_have_attribute("data-tokens", re.compile(r"^\d+$"))
    page.locator("#ch-rendered summary").click()
    expect(page.locator("#ch-text .sp").first).to_be_visible()


def main() -> None:
    executable = shutil.which("chromium")
    if executable is None:
        sys.exit("no `chromium` on PATH: apt-get install -y chromium")
    server = start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            for width in (1440, 360):
                context = browser.new_context(viewport={"width": width, "height": 900})
                page = context.new_page()
                weight = first_load(page, f"{server.base}/")
                print(
                    f"{width} px first load: {weight}, total {weight['static'] + weight['api']} B"
                )
                stage(page)
                out = ROOT / "docs" / f"playground-{width}.png"
                page.screenshot(path=str(out), full_page=True)
                shrink(out)
                print(f"wrote {out.relative_to(ROOT)}: {out.stat().st_size} B")
                if width == 1440:
                    stage_chat(page)
                    out = ROOT / "docs" / "playground-chat-1440.png"
                    page.locator("#chat").screenshot(path=str(out))
                    shrink(out)
                    print(f"wrote {out.relative_to(ROOT)}: {out.stat().st_size} B")
                context.close()
            browser.close()
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
