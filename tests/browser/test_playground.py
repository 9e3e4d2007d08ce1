"""The playground page in real headless Chromium against a real `toksvc serve` on 127.0.0.1.

Every test checks, when it ends, that no request left 127.0.0.1 and the console logged no error.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from playwright.sync_api import Page, expect

from service.bpe import PythonEngine, Tokenizer
from service.bpe.engine.patterns import PATTERNS
from service.bpe.text.explain import inline_vocabulary
from tests.browser.conftest import Watched

pytestmark = pytest.mark.browser

EMOJI_TEXT = "I 🦜 parrots"  # cl100k splits the parrot's four bytes over three ids


def shown_count(pg: Watched, ref: str, text: str) -> int:
    """Wait until the page shows the API's count for `text`, and return it."""
    count: int = pg.api(f"/v1/tokenizers/{ref}/count", {"text": text})["count"]
    expect(pg.page.locator("#count-tokens")).to_have_text(f"{count:,}")
    return count


def test_typed_text_shows_the_api_count_ids_and_spans(pg: Watched) -> None:
    page = pg.page
    text = "Counting tokens: naïve café, 中文, 12345 and 🙂!"
    page.locator("#text").fill(text)
    count = shown_count(pg, "cl100k_base@1", text)
    ids = pg.api("/v1/tokenizers/cl100k_base@1/encode", {"text": text})["ids"]
    expect(page.locator("#ids")).to_have_value(json.dumps(ids, separators=(",", ":")))
    expect(page.locator("#spans .tok")).to_have_count(count)
    expect(page.locator("#count-chars")).to_have_text(str(len(text)))
    expect(page.locator("#count-bytes")).to_have_text(str(len(text.encode())))
    # the compare table counts the same text with the same tokenizer
    expect(page.locator('#compare-table tr[data-ref="cl100k_base@1"] td').first).to_have_text(
        str(count)
    )


def test_long_text_counts_every_token_and_shows_the_first_spans(pg: Watched) -> None:
    page = pg.page
    text = "lorem ipsum, dolor sit amet; " * 600  # more tokens than the page draws
    page.locator("#text").fill(text)
    count = shown_count(pg, "cl100k_base@1", text)
    shown = page.locator("#spans .tok")
    expect(page.locator("#spans-more")).to_contain_text(f"of {count} tokens")
    assert 0 < shown.count() < count
    assert len(json.loads(page.locator("#ids").input_value())) == count


def test_switching_tokenizer_updates_the_count(pg: Watched) -> None:
    page = pg.page
    text = "Wie viele Tokens braucht dieser deutsche Satz mit Umlauten: äöü ß?"
    page.locator("#text").fill(text)
    cl100k = shown_count(pg, "cl100k_base@1", text)
    page.locator("#tokenizer").select_option("gpt2@1")
    gpt2 = shown_count(pg, "gpt2@1", text)
    assert gpt2 != cl100k  # the page really switched: the two vocabularies differ on this text
    page.locator("#tokenizer").select_option("qwen3@1")
    shown_count(pg, "qwen3@1", text)


def test_keyboard_moves_between_tokens_and_shows_id_and_bytes(pg: Watched) -> None:
    page = pg.page
    page.locator("#text").fill("Hello world")
    shown_count(pg, "cl100k_base@1", "Hello world")
    page.locator("#spans .tok").first.focus()
    page.keyboard.press("ArrowRight")
    second = page.locator("#spans .tok").nth(1)
    expect(second).to_be_focused()
    expect(page.locator("#token-detail")).to_have_text(
        "token 2: id 1917 · bytes 20 77 6f 72 6c 64 · piece ␣world"
    )


def test_special_token_policy_selector(pg: Watched) -> None:
    page = pg.page
    pg.expected_statuses.add(422)
    text = "end <|endoftext|>"
    page.locator("#text").fill(text)
    expect(page.locator("#tokens-error")).to_contain_text("Disallowed special token (422)")
    page.locator("#policy").select_option("allow")
    expect(page.locator("#ids")).to_have_value(
        json.dumps(
            pg.api("/v1/tokenizers/cl100k_base@1/encode", {"text": text, "allowed_special": "all"})[
                "ids"
            ],
            separators=(",", ":"),
        )
    )
    expect(page.locator("#tokens-error")).to_be_hidden()
    expect(page.locator("#spans .tok.special")).to_have_count(1)


def step_to_the_end(page: Page, lanes: int, text: str) -> None:
    """Once the stepper explains `text`, click Next, one merge per click, until it is disabled
    (bounded by the shown total)."""
    expect(page.locator("#st-lanes")).to_have_attribute("data-text", text)
    expect(page.locator("#st-lanes .lane")).to_have_count(lanes)
    total = int(page.locator("#st-pos").inner_text().split("/")[1])
    for k in range(1, total + 1):
        page.locator("#st-next").click()
        expect(page.locator("#st-pos")).to_have_text(f"{k} / {total}")
    expect(page.locator("#st-next")).to_be_disabled()


def lane_ids(page: Page, rule: str) -> list[int]:
    ids: list[int] = json.loads(page.locator(f'.lane[data-rule="{rule}"] .cur-ids').inner_text())
    return ids


def test_merge_stepper_first_to_last_reaches_encode_ids(pg: Watched) -> None:
    page = pg.page
    text = "Hello world, lowest newer 🙂"
    page.locator("#st-text").fill(text)
    data = text.encode()
    expect(page.locator("#st-lanes")).to_have_attribute("data-text", text)
    start = pg.api(
        "/v1/tokenizers/cl100k_base@1/decode",
        {"batch": [[i] for i in lane_ids(page, "ranks")], "output": "base64"},
    )
    assert [base64.b64decode(r["base64"]) for r in start["results"]] == [
        data[i : i + 1] for i in range(len(data))
    ]
    step_to_the_end(page, 1, text)
    assert (
        lane_ids(page, "ranks")
        == pg.api("/v1/tokenizers/cl100k_base@1/encode", {"text": text})["ids"]
    )
    page.locator("#st-back").click()
    assert (
        lane_ids(page, "ranks")
        != pg.api("/v1/tokenizers/cl100k_base@1/encode", {"text": text})["ids"]
    )


def test_merge_stepper_pairs_tokenizer(pg: Watched) -> None:
    page = pg.page
    page.locator("#tokenizer").select_option("qwen3@1")
    page.locator("#st-text").fill("tokenization")
    expect(page.locator("#st-lanes h3")).to_have_text("qwen3@1 (pairs rule)")
    step_to_the_end(page, 1, "tokenization")
    expected = pg.api("/v1/tokenizers/qwen3@1/encode", {"text": "tokenization"})["ids"]
    assert lane_ids(page, "pairs") == expected


def test_textbook_counterexample_under_both_rules(pg: Watched) -> None:
    page = pg.page
    page.locator("#st-source").select_option("textbook")
    step_to_the_end(page, 2, "abc")
    assert lane_ids(page, "pairs") == [97, 256]
    assert lane_ids(page, "ranks") == [258]
    expect(page.locator('.lane[data-rule="ranks"] .stepinfo')).to_contain_text("«a» (97) + «bc»")


def test_train_in_the_page_then_step(pg: Watched) -> None:
    page = pg.page
    page.locator("#st-source").select_option("trained")
    expect(page.locator("#st-trainstatus")).to_contain_text("learned")
    text = page.locator("#st-text").input_value()
    step_to_the_end(page, 2, text)
    merges = [
        list(map(int, line.split()))
        for line in page.locator("#st-merges").input_value().splitlines()
    ]
    for rule in ("pairs", "ranks"):
        vocab = inline_vocabulary(rule, merges)
        tok = Tokenizer(vocab, PythonEngine(vocab, PATTERNS["gpt2"]))
        assert lane_ids(page, rule) == tok.encode_ordinary(text)
        assert len(lane_ids(page, rule)) < len(text.encode())  # the trained merges did apply


def test_stream_holds_back_a_split_emoji_and_never_shows_a_replacement(pg: Watched) -> None:
    page = pg.page
    ids = pg.api("/v1/tokenizers/cl100k_base@1/encode", {"text": EMOJI_TEXT})["ids"]
    pieces = pg.api(
        "/v1/tokenizers/cl100k_base@1/decode", {"batch": [[i] for i in ids], "output": "base64"}
    )["results"]
    split = [base64.b64decode(p["base64"]) for p in pieces]
    assert any(_not_utf8(b) for b in split), "the test text must split a character over ids"
    page.locator("#text").fill(EMOJI_TEXT)
    shown_count(pg, "cl100k_base@1", EMOJI_TEXT)
    # the spans show the split character once, on the token completing it, the rest as hex
    spans = page.locator("#spans .tok").all_inner_texts()
    assert re.sub("\u2039[0-9a-f ]+\u203a", "", "".join(spans)) == EMOJI_TEXT  # hex in angle quotes
    assert "🦜" in spans[[i for i, b in enumerate(split) if _not_utf8(b)][-1]]
    page.locator("#sm-use").click()
    expect(page.locator("#sm-progress")).to_have_text(f"fed 0 of {len(ids)} ids")
    held_seen = False
    for k in range(1, len(ids) + 1):
        page.locator("#sm-step").click()
        done = k == len(ids)
        expect(page.locator("#sm-progress")).to_have_text(
            f"done: {len(ids)} ids fed" if done else f"fed {k} of {len(ids)} ids"
        )
        shown = page.locator("#sm-text").inner_text()
        assert "\ufffd" not in shown
        assert EMOJI_TEXT.startswith(shown)
        held_seen = held_seen or page.locator("#sm-held").is_visible()
    assert held_seen
    expect(page.locator("#sm-text")).to_have_text(EMOJI_TEXT)


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def test_page_fits_a_360px_screen(pg: Watched) -> None:
    page = pg.page
    page.set_viewport_size({"width": 360, "height": 800})
    page.locator("#st-source").select_option("textbook")
    expect(page.locator("#st-lanes .lane")).to_have_count(2)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 360
    # every form control has a label
    unlabeled = page.evaluate(
        """[...document.querySelectorAll('input, select, textarea')]
             .filter(e => !e.labels.length && !e.getAttribute('aria-label')).map(e => e.id)"""
    )
    assert unlabeled == []
