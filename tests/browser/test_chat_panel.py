"""The playground's Chat and cost panel in real Chromium against a real `toksvc serve`.

A conversation built in the page must show the same input tokens as POST /v1/models/{model}/count
and the same cost as /estimate; every test also checks (in `pg`) that no request left 127.0.0.1
and the console logged no error other than the problems a test provokes on purpose.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Watched

pytestmark = pytest.mark.browser

# built out of order on purpose: the test moves the user message up
BUILT = [
    {"role": "system", "content": "You answer in French, briefly."},
    {"role": "assistant", "content": "Un token est un morceau de texte."},
    {"role": "user", "content": "What is a token? Say it with naïve café, 中文 and 🙂."},
]
CONVERSATION = [BUILT[0], BUILT[2], BUILT[1]]


def page_messages(page: Page) -> list[dict[str, str]]:
    """The conversation as the editor holds it: each message's role and content, in order."""
    n = page.locator("#ch-messages .msg").count()
    return [
        {"role": page.locator(f"#ch-role-{i}").input_value(),
         "content": page.locator(f"#ch-content-{i}").input_value()}
        for i in range(n)
    ]  # fmt: skip


def shown_count(pg: Watched, model: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    """Wait until the panel shows the API's total and per-message tokens; return the count."""
    count: dict[str, Any] = pg.api(
        f"/v1/models/{model}/count", {"messages": messages, "return_text": True}
    )
    expect(pg.page.locator("#ch-total")).to_have_text(f"{count['input_tokens']:,}")
    for m in count["messages"]:
        tokens = pg.page.locator(f"#ch-tokens-{m['index']}")
        expect(tokens).to_have_attribute("data-tokens", str(m["tokens"]))
    return count


def test_a_conversation_built_in_the_page_shows_the_api_count_and_cost(pg: Watched) -> None:
    page = pg.page
    page.locator("#ch-model").select_option("gpt-4o@1")
    expect(page.locator("#ch-info")).to_contain_text("Estimate (exact: false)")
    removes = page.locator('#ch-messages button[data-act="remove"]')
    for _ in range(removes.count()):
        removes.first.click()
    expect(page.locator("#ch-messages .msg")).to_have_count(0)
    expect(page.locator("#ch-error")).to_contain_text("Add a message")
    for i, message in enumerate(BUILT):
        page.locator("#ch-add").click()
        expect(page.locator(f"#ch-content-{i}")).to_be_focused()
        page.locator(f"#ch-role-{i}").select_option(message["role"])
        page.locator(f"#ch-content-{i}").fill(message["content"])
    page.get_by_role("button", name="Move message 3 up", exact=True).click()
    assert page_messages(page) == CONVERSATION
    page.locator("#ch-outset").check()
    page.locator("#ch-outn").fill("250")

    count = shown_count(pg, "gpt-4o@1", CONVERSATION)
    assert len(count["messages"]) == 3
    est = pg.api("/v1/models/gpt-4o@1/estimate", {"messages": CONVERSATION, "output_tokens": 250})
    assert est["input_tokens"] == count["input_tokens"]
    expect(page.locator("#ch-cost-total")).to_have_text(f"{est['cost']['total']} {est['currency']}")
    expect(page.locator("#ch-outtok")).to_have_text("250")
    rows = page.locator("#ch-cost tbody tr")
    expect(rows.nth(0).locator("td").last).to_have_text(f"{est['cost']['input']} USD")
    expect(rows.nth(1).locator("td").last).to_have_text(f"{est['cost']['output']} USD")
    expect(page.locator("#ch-price")).to_contain_text(est["price_file"])

    # priced at the model's maximum output instead
    page.locator("#ch-outmax").check()
    worst = pg.api("/v1/models/gpt-4o@1/estimate", {"messages": CONVERSATION})
    assert worst["cost"]["total"] != est["cost"]["total"]
    expect(page.locator("#ch-cost-total")).to_have_text(f"{worst['cost']['total']} USD")
    expect(page.locator("#ch-outtok")).to_have_text(f"{worst['output_tokens']:,}")


def test_switching_model_changes_the_count_as_the_api_says(pg: Watched) -> None:
    page = pg.page
    page.locator("#ch-model").select_option("gpt-4o@1")
    messages = page_messages(page)
    assert len(messages) == 3
    gpt4o = shown_count(pg, "gpt-4o@1", messages)["input_tokens"]
    expect(page.locator("#ch-cost-total")).not_to_have_text("\u2013")

    page.locator("#ch-model").select_option("qwen3@1")
    qwen3 = shown_count(pg, "qwen3@1", messages)
    assert qwen3["input_tokens"] != gpt4o
    assert page.locator("#ch-text").text_content() == qwen3["text"]  # the rendered prompt
    expect(page.locator("#ch-text")).to_be_hidden()  # collapsed until asked for
    page.locator("#ch-rendered summary").click()
    expect(page.locator("#ch-text")).to_be_visible()
    expect(page.locator("#ch-text .sp").first).to_have_text("<|im_start|>")
    expect(page.locator("#ch-info")).to_contain_text("Exact count")
    expect(page.locator("#ch-noprice")).to_contain_text("No cost estimate")  # qwen3 has no price
    expect(page.locator("#ch-cost")).to_be_hidden()
    expect(page.locator("#ch-cost-total")).to_have_text("\u2013")
    asked = [u.split("/v1/models/")[1] for u in pg.requests if "/v1/models/qwen3" in u]
    assert "qwen3%401/count" in asked
    assert "qwen3%401/estimate" not in asked  # /v1/models said it has no price: not asked

    page.locator("#ch-model").select_option("gpt-oss@1")
    harmony = shown_count(pg, "gpt-oss@1", messages)
    assert harmony["method"] == "harmony"
    assert page.locator("#ch-text").text_content() == harmony["text"]

    # Qwen's template renders no `developer` message: a message that has that role says so
    page.locator("#ch-role-0").select_option("developer")
    page.locator("#ch-model").select_option("qwen3@1")
    messages[0]["role"] = "developer"
    assert shown_count(pg, "qwen3@1", messages)["messages"][0]["tokens"] == 0
    expect(page.locator("#ch-tokens-0")).to_have_text(
        "0 tokens: the template renders nothing for it"
    )
    expect(page.locator("#ch-role-0 option:checked")).to_have_text(
        "developer (not rendered by qwen3)"
    )
    expect(page.locator("#ch-role-1 option")).to_have_text(["system", "user", "assistant", "tool"])


def test_an_invalid_message_shows_the_api_detail(pg: Watched) -> None:
    page = pg.page
    pg.expected_statuses.add(422)
    page.locator("#ch-model").select_option("gpt-oss@1")
    page.locator("#ch-role-2").select_option("tool")  # harmony: a tool result needs a tool call
    messages = page_messages(page)
    problem = pg.problem("/v1/models/gpt-oss@1/count", {"messages": messages}, 422)
    assert problem["index"] == 2
    expect(page.locator("#ch-error")).to_contain_text(problem["detail"])
    expect(page.locator('#ch-messages .msg[data-i="2"]')).to_have_class("msg invalid")
    expect(page.locator("#ch-tokens-2")).to_contain_text("invalid")  # in words, not color alone
    expect(page.locator("#ch-total")).to_have_text("\u2013")

    page.locator("#ch-role-2").select_option("assistant")
    shown_count(pg, "gpt-oss@1", page_messages(page))
    expect(page.locator("#ch-error")).to_be_hidden()

    # gpt-4's maximum output is its whole context window: by default the estimate prices what
    # the window leaves after the input
    page.locator("#ch-model").select_option("gpt-4@1")
    est = pg.api("/v1/models/gpt-4@1/estimate", {"messages": page_messages(page)})
    assert est["output_tokens"] == est["context_window"] - est["input_tokens"]
    expect(page.locator("#ch-outtok")).to_have_text(f"{est['output_tokens']:,}")
    expect(page.locator("#ch-cost-error")).to_be_hidden()
    page.locator("#ch-outset").check()
    page.locator("#ch-outn").fill("100")
    expect(page.locator("#ch-cost-error")).to_be_hidden()
    expect(page.locator("#ch-cost-total")).to_contain_text("USD")


def test_the_editor_works_from_the_keyboard(pg: Watched) -> None:
    page = pg.page
    page.locator("#ch-model").select_option("gpt-4o-mini@1")
    before = page_messages(page)
    page.get_by_role("button", name="Move message 2 down", exact=True).focus()
    page.keyboard.press("Enter")
    assert page_messages(page) == [before[0], before[2], before[1]]
    # the moved message is last now: focus stays on it, on the button that can still move it
    expect(page.get_by_role("button", name="Move message 3 up", exact=True)).to_be_focused()
    expect(page.locator("#ch-status")).to_have_text("Moved message 2 to position 3.")

    page.locator("#ch-add").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#ch-content-3")).to_be_focused()
    page.keyboard.type("Thanks! And the cost?")
    after = page_messages(page)
    assert after[3] == {"role": "assistant", "content": "Thanks! And the cost?"}
    shown_count(pg, "gpt-4o-mini@1", after)

    page.get_by_role("button", name="Remove message 2", exact=True).focus()
    page.keyboard.press("Enter")
    expect(page.locator("#ch-messages .msg")).to_have_count(3)
    expect(page.get_by_role("button", name="Remove message 2", exact=True)).to_be_focused()
    shown_count(pg, "gpt-4o-mini@1", [after[0], after[2], after[3]])
