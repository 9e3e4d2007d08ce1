"""The playground's Chat and cost panel in real Chromium against a real `toksvc serve`.

A conversation built in the page must show the same input tokens as POST /v1/models/{model}/count
and the same cost as /estimate; every test also checks (in `pg`) that no request left 127.0.0.1
and the console logged no error other than the problems a test provokes on purpose.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
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
        {
            "role": page.locator(f"#ch-role-{i}").input_value(),
            "content": page.locator(f"#ch-content-{i}").input_value(),
        }
        for i in range(n)
    ]


def shown_count(
    pg: Watched,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[Any] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> dict[str, Any]:
    """Wait until the panel shows the API's total and per-message tokens (and the tools' tokens,
    when `tools` are given); return the count."""
    body: dict[str, Any] = {"messages": messages, "return_text": True, "breakdown": True}
    body["add_generation_prompt"] = add_generation_prompt
    if tools is not None:
        body["tools"] = tools
    count: dict[str, Any] = pg.api(f"/v1/models/{model}/count", body)
    expect(pg.page.locator("#ch-total")).to_have_text(f"{count['input_tokens']:,}")
    for m in count["messages"]:
        tokens = pg.page.locator(f"#ch-tokens-{m['index']}")
        expect(tokens).to_have_attribute("data-tokens", str(m["tokens"]))
    if tools is not None:
        shown = pg.page.locator("#ch-tools-tokens")
        expect(shown).to_have_attribute("data-tokens", str(count["tools_tokens"]))
        expect(shown).to_contain_text(f"{count['tools_tokens']:,} token")
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
    most = httpx.get(f"{pg.base}/v1/models/gpt-4o@1", timeout=30).json()["max_output_tokens"]
    worst = pg.api(
        "/v1/models/gpt-4o@1/estimate", {"messages": CONVERSATION, "max_output_tokens": most}
    )
    assert worst["cost"]["total"] != est["cost"]["total"]
    expect(page.locator("#ch-cost-total")).to_have_text(f"{worst['cost']['total']} USD")
    expect(page.locator("#ch-outtok")).to_have_text(f"{most:,}")

    # the input alone, and the longest reply's cost apart
    page.locator("#ch-outnone").check()
    alone = pg.api("/v1/models/gpt-4o@1/estimate", {"messages": CONVERSATION})
    expect(page.locator("#ch-cost-total")).to_have_text(f"{alone['cost']['input']} USD")
    expect(page.locator("#ch-outtok")).to_have_text("0")
    expect(page.locator("#ch-price")).to_contain_text(f"would cost {alone['max_output']['cost']}")


def test_switching_model_changes_the_count_as_the_api_says(pg: Watched) -> None:
    page = pg.page
    page.locator("#ch-model").select_option("gpt-4o@1")
    messages = page_messages(page)
    assert len(messages) == 4
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


BAR, SP = "\uff5c", "\u2581"  # DeepSeek's fullwidth bar and SentencePiece's space mark
# what each tokenizer's own literals look like in the default conversation's rendered prompt
BOXED = {
    "mistral-large-2411@1": [
        *("<s>", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[INST]", "[/INST]"),
        *("</s>", "[INST]", "[/INST]"),
    ],
    # DeepSeek's User and Assistant markers are added tokens, not special ones
    "deepseek-v3@1": [
        *(f"<{BAR}begin{SP}of{SP}sentence{BAR}>", f"<{BAR}User{BAR}>", f"<{BAR}Assistant{BAR}>"),
        *(f"<{BAR}end{SP}of{SP}sentence{BAR}>", f"<{BAR}User{BAR}>", f"<{BAR}Assistant{BAR}>"),
    ],
    "qwen3@1": ["<|im_start|>", "<|im_end|>"] * 4 + ["<|im_start|>"],
}


def test_the_rendered_prompt_boxes_the_tokenizer_s_own_special_and_added_tokens(
    pg: Watched,
) -> None:
    page = pg.page
    messages = page_messages(page)
    page.locator("#ch-rendered summary").click()
    for model, boxes in BOXED.items():
        page.locator("#ch-model").select_option(model)
        count = shown_count(pg, model, messages)
        expect(page.locator("#ch-text")).to_have_text(count["text"])  # all of it, boxed or not
        expect(page.locator("#ch-text .sp")).to_have_text(boxes)
    expect(page.locator("#ch-textlen")).to_contain_text("special and added tokens boxed")


def test_the_default_conversation_counts_for_every_model_and_can_be_continued(
    pg: Watched,
) -> None:
    """It ends with a user message, counted with the reply started: every chat format accepts
    that. An assistant message last is refused by Mistral's formats until it is continued."""
    page = pg.page
    bodies = sent_bodies(page, "count")
    messages = page_messages(page)
    assert messages[-1]["role"] == "user"
    expect(page.get_by_label("start the assistant's reply")).to_be_checked()
    models = [m["ref"] for m in httpx.get(f"{pg.base}/v1/models", timeout=30).json()["models"]]
    assert "mistral-large-2411@1" in models and "mistral-nemo@1" in models
    for model in models:
        page.locator("#ch-model").select_option(model)
        shown_count(pg, model, messages)
        expect(page.locator("#ch-error")).to_be_hidden()
        assert bodies[-1]["add_generation_prompt"] is True

    pg.expected_statuses.add(422)
    page.locator("#ch-model").select_option("mistral-large-2411@1")
    page.locator("#ch-add").click()
    page.locator("#ch-content-4").fill("The one whose format adds the fewest")
    continued = page_messages(page)
    assert continued[-1]["role"] == "assistant"
    refused = pg.problem("/v1/models/mistral-large-2411@1/count", {"messages": continued}, 422)
    expect(page.locator("#ch-error")).to_contain_text(refused["detail"])
    page.get_by_label("continue the last message").check()
    count = shown_count(pg, "mistral-large-2411@1", continued, add_generation_prompt=False)
    expect(page.locator("#ch-error")).to_be_hidden()
    assert bodies[-1]["add_generation_prompt"] is False
    assert count["text"].endswith("The one whose format adds the fewest")  # no </s>: continued


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

    # gpt-4's maximum output fills its whole context window: priced with it, the estimate says
    # the request does not fit
    page.locator("#ch-model").select_option("gpt-4@1")
    expect(page.locator("#ch-cost-total")).to_contain_text("USD")  # the input alone fits
    page.locator("#ch-outmax").check()
    body = {"messages": page_messages(page), "max_output_tokens": 8192}
    overflow = pg.problem("/v1/models/gpt-4@1/estimate", body, 422)
    expect(page.locator("#ch-cost-error")).to_contain_text(overflow["detail"])
    page.locator("#ch-outset").check()
    page.locator("#ch-outn").fill("100")
    expect(page.locator("#ch-cost-error")).to_be_hidden()
    expect(page.locator("#ch-cost-total")).to_contain_text("USD")


def test_the_editor_works_from_the_keyboard(pg: Watched) -> None:
    page = pg.page
    page.locator("#ch-model").select_option("gpt-4o-mini@1")
    before = page_messages(page)
    page.get_by_role("button", name="Move message 3 down", exact=True).focus()
    page.keyboard.press("Enter")
    assert page_messages(page) == [before[0], before[1], before[3], before[2]]
    # the moved message is last now: focus stays on it, on the button that can still move it
    expect(page.get_by_role("button", name="Move message 4 up", exact=True)).to_be_focused()
    expect(page.locator("#ch-status")).to_have_text("Moved message 3 to position 4.")

    page.locator("#ch-add").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#ch-content-4")).to_be_focused()
    page.keyboard.type("Thanks! And the cost?")
    after = page_messages(page)
    assert after[4] == {"role": "user", "content": "Thanks! And the cost?"}  # after an assistant
    shown_count(pg, "gpt-4o-mini@1", after)

    page.get_by_role("button", name="Remove message 2", exact=True).focus()
    page.keyboard.press("Enter")
    expect(page.locator("#ch-messages .msg")).to_have_count(4)
    expect(page.get_by_role("button", name="Remove message 2", exact=True)).to_be_focused()
    shown_count(pg, "gpt-4o-mini@1", [after[0], after[2], after[3], after[4]])


# an assistant's tool call and the tool's result, as OpenAI's API takes them
ARGUMENTS = '{"city": "Paris", "unit": "celsius"}'  # a JSON string, as OpenAI sends it
CALL: dict[str, Any] = {
    "id": "call_w1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": ARGUMENTS},
}
WITH_TOOLS: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a concise assistant. Answer in one sentence."},
    {"role": "user", "content": "What is the weather in Paris right now?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_w1", "content": '{"temp_c": 18, "sky": "clear"}'},
    {"role": "assistant", "content": "It is 18 °C and clear in Paris."},
]


def sent_bodies(page: Page, op: str) -> list[dict[str, Any]]:
    """Record the JSON body of every POST the page makes to /v1/models/{model}/`op`."""
    bodies: list[dict[str, Any]] = []

    def record(request: Any) -> None:
        if request.method == "POST" and request.url.endswith(f"/{op}"):
            bodies.append(request.post_data_json)

    page.on("request", record)
    return bodies


def test_tools_tool_calls_and_results_count_as_the_api_counts_them(pg: Watched) -> None:
    page = pg.page
    counts = sent_bodies(page, "count")
    page.locator("#ch-model").select_option("gpt-4o@1")
    page.get_by_role("button", name="Remove message 4", exact=True).click()  # the assistant's last
    tools = json.loads(page.locator("#ch-tools").input_value())  # prefilled: one function tool
    assert [(t["type"], t["function"]["name"]) for t in tools] == [("function", "get_weather")]
    expect(page.locator("#ch-tools-tokens")).to_have_text("not offered: not sent")
    page.get_by_label("offer tools").focus()
    page.keyboard.press("Space")  # from the keyboard
    expect(page.get_by_label("offer tools")).to_be_checked()

    page.locator("#ch-role-1").select_option("tool")  # each role shows its own fields
    expect(page.get_by_label("Message 2 tool_call_id")).to_be_visible()
    page.locator("#ch-role-1").select_option("user")
    expect(page.get_by_label("Message 2 tool_call_id")).to_be_hidden()
    page.locator("#ch-content-1").fill(WITH_TOOLS[1]["content"])
    page.locator("#ch-content-2").fill("")
    expect(page.locator("#ch-callid-2")).to_be_hidden()  # an assistant has calls, not a call id
    page.get_by_label("Message 3 tool calls (JSON, optional)").fill(json.dumps([CALL]))
    page.locator("#ch-add").click()  # the call is unanswered: the new message is its result
    expect(page.locator("#ch-role-3")).to_have_value("tool")
    expect(page.locator("#ch-calls-3")).to_be_hidden()
    expect(page.get_by_label("Message 4 tool_call_id")).to_have_value("call_w1")
    page.locator("#ch-content-3").fill(WITH_TOOLS[3]["content"])
    page.locator("#ch-add").click()
    expect(page.locator("#ch-role-4")).to_have_value("assistant")
    page.locator("#ch-content-4").fill(WITH_TOOLS[4]["content"])

    count = shown_count(pg, "gpt-4o@1", WITH_TOOLS, tools)
    assert count["tools_tokens"] > 0
    assert counts[-1] == {
        "messages": WITH_TOOLS,
        "add_generation_prompt": True,
        "tools": tools,
        "return_text": False,
        "breakdown": True,
    }
    expect(page.locator("#ch-method")).to_contain_text(f"{count['tools_tokens']:,} for tools")
    est = pg.api("/v1/models/gpt-4o@1/estimate", {"messages": WITH_TOOLS, "tools": tools})
    assert est["input_tokens"] == count["input_tokens"]
    expect(page.locator("#ch-cost-total")).to_have_text(f"{est['cost']['total']} USD")

    # an exact template and harmony render the same tools and calls
    page.locator("#ch-model").select_option("qwen3@1")
    qwen3 = shown_count(pg, "qwen3@1", WITH_TOOLS, tools)
    assert "get_weather" in qwen3["text"]
    assert page.locator("#ch-text").text_content() == qwen3["text"]
    page.locator("#ch-model").select_option("gpt-oss@1")
    harmony = shown_count(pg, "gpt-oss@1", WITH_TOOLS, tools)
    assert counts[-1]["tools"] == tools and counts[-1]["messages"] == WITH_TOOLS

    # the tools no longer offered: not sent, and the count is the conversation's alone
    page.get_by_label("offer tools").uncheck()
    alone = shown_count(pg, "gpt-oss@1", WITH_TOOLS)
    assert alone["input_tokens"] != harmony["input_tokens"]
    assert "tools" not in counts[-1]
    expect(page.locator("#ch-tools-tokens")).to_have_text("not offered: not sent")


def test_invalid_tools_json_is_named_and_nothing_is_sent(pg: Watched) -> None:
    page = pg.page
    pg.expected_statuses.add(422)
    counts = sent_bodies(page, "count")
    estimates = sent_bodies(page, "estimate")
    page.locator("#ch-model").select_option("gpt-4o@1")
    page.get_by_label("offer tools").check()
    tools = json.loads(page.locator("#ch-tools").input_value())
    messages = page_messages(page)
    shown_count(pg, "gpt-4o@1", messages, tools)
    sent = (len(counts), len(estimates))

    editor = page.get_by_label("Tools: a JSON array of OpenAI function tools")
    editor.fill('[{"type": "function", "function": {"name": "get_weather"}')
    expect(page.locator("#ch-tools-error")).to_contain_text("Tools are not valid JSON: ")
    expect(editor).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#ch-total")).to_have_text("\u2013")
    expect(page.locator("#ch-method")).to_have_text("Not counted until the tools are a JSON array.")
    assert (len(counts), len(estimates)) == sent

    editor.fill(json.dumps(tools[0]))  # one tool, not an array of them
    expect(page.locator("#ch-tools-error")).to_have_text(
        "Tools must be a JSON array […], not an object (wrap it in [ ])."
    )
    # an assistant's tool calls that are not JSON either: both named, still nothing sent
    page.locator("#ch-calls-2").fill('[{"id": "call_1"')
    expect(page.locator("#ch-calls-error-2")).to_contain_text("Tool calls are not valid JSON: ")
    expect(page.locator("#ch-tokens-2")).to_contain_text("invalid")  # in words, not color alone
    expect(page.locator("#ch-calls-2")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#ch-method")).to_have_text(
        "Not counted until message 3's tool calls and the tools are JSON arrays."
    )
    assert (len(counts), len(estimates)) == sent

    # JSON arrays, but a tool the API refuses: its problem is shown and the editor marked
    page.locator("#ch-calls-2").fill("")
    editor.fill(json.dumps([{"type": "function", "function": {"description": "no name"}}]))
    bad = [{"type": "function", "function": {"description": "no name"}}]
    problem = pg.problem("/v1/models/gpt-4o@1/count", {"messages": messages, "tools": bad}, 422)
    assert problem["index"] is None and problem["field"].startswith("tools[0]")
    expect(page.locator("#ch-error")).to_contain_text(problem["detail"])
    expect(page.locator("#ch-tools-error")).to_be_hidden()
    expect(editor).to_have_attribute("aria-invalid", "true")
    assert len(counts) == sent[0] + 1

    editor.fill(json.dumps(tools))
    shown_count(pg, "gpt-4o@1", messages, tools)
    expect(editor).to_have_attribute("aria-invalid", "false")
    expect(page.locator("#ch-error")).to_be_hidden()
