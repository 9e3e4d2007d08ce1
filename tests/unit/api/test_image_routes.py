"""Images over HTTP: an image part adds its rule's tokens (the provider's worked examples) to the
count of the same conversation without it, in the OpenAI, Anthropic and Responses shapes; the
count becomes an estimate; bad images and models without a rule are 422s naming the field."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE, Settings
from service.store.formats.model import (
    AnthropicImages,
    FixedImages,
    ImageRule,
    JinjaChat,
    ModelFile,
    OpenAIEstimateChat,
    OpenAIPatchImages,
)
from service.store.loader import load_store
from service.store.manifest import add_entry
from tests.support.testdata import image_bytes
from tests.unit.models.test_images import gif, jpeg, png

QWEN_TEMPLATE = (BUNDLED_STORE / "models" / "qwen2.5@1.json").read_bytes()


def _profile(name: str, images: ImageRule, chat: Any = None) -> bytes:
    mf = ModelFile(
        name=name,
        version="1",
        tokenizer="cl100k_base@1",
        context_window=100_000,
        max_output_tokens=1000,
        chat=chat or OpenAIEstimateChat(),
        images=images,
    )
    return msgspec.json.encode(mf)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient[Any]]:
    """The bundled store plus profiles with the rules no bundled model uses."""
    store: Path = tmp_path_factory.mktemp("imagestore")
    qwen = msgspec.json.decode(QWEN_TEMPLATE)["chat"]["template"]
    for name, rule, chat in [
        ("claude-like", AnthropicImages(), None),
        ("mini-like", OpenAIPatchImages(multiplier=1.62), None),
        ("gemma-like", FixedImages(tokens=260), JinjaChat(template=qwen)),
    ]:
        add_entry(store, "models", name, "1", _profile(name, rule, chat))
    registry = load_store([BUNDLED_STORE, store], engine_factory("auto"))
    assert not registry.failures, registry.failures
    with TestClient(create_app(Settings(), registry)) as c:
        yield c


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def image_part(data: bytes, kind: str = "png", **extra: Any) -> dict[str, Any]:
    url = f"data:image/{kind};base64,{b64(data)}"
    return {"type": "image_url", "image_url": {"url": url, **extra}}


TEXT = [{"role": "system", "content": "Describe."}, {"role": "user", "content": "What is this?"}]


def with_parts(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        TEXT[0],
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, *parts]},
    ]


def count(client: TestClient[Any], model: str, messages: list[Any]) -> dict[str, Any]:
    r = client.post(f"/v1/models/{model}/count", json={"messages": messages})
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    return doc


@pytest.mark.parametrize(
    ("part", "tokens"),
    [
        (image_part(png(1024, 1024)), 765),  # OpenAI's guide: 1024 x 1024 high: 765
        (image_part(jpeg(2048, 4096), "jpeg", detail="high"), 1105),  # 2048 x 4096 high: 1105
        (image_part(gif(4096, 8192), "gif", detail="low"), 85),  # low: 85 whatever the size
        (image_part(image_bytes("python.jpg"), "jpeg"), 85 + 170),  # a real 16 x 16 JPEG: one tile
        ({**image_part(png(4096, 8192)), "width": 1024, "height": 1024}, 765),  # given size wins
        (
            {
                "type": "image_url",
                "image_url": {"url": "https://example.com/a.png"},
                "width": 2048,
                "height": 4096,
            },
            1105,
        ),  # a URL with its size: counted, never fetched
    ],
)
def test_an_image_part_adds_the_tile_rule_to_its_message(
    client: TestClient[Any], part: dict[str, Any], tokens: int
) -> None:
    plain = count(client, "gpt-4o", TEXT)
    doc = count(client, "gpt-4o", with_parts(part))
    assert doc["input_tokens"] == plain["input_tokens"] + tokens
    assert doc["messages"][1]["tokens"] == plain["messages"][1]["tokens"] + tokens
    assert doc["messages"][0] == plain["messages"][0]
    assert plain["exact"] is False and doc["exact"] is False and doc["method"] == "openai-estimate"


def test_two_images_and_the_estimate_route(client: TestClient[Any]) -> None:
    plain = count(client, "gpt-4o-mini", TEXT)["input_tokens"]
    parts = [image_part(png(128, 64), detail="low"), image_part(png(128, 64), detail="high")]
    doc = count(client, "gpt-4o-mini", with_parts(*parts))
    assert doc["input_tokens"] == plain + 2833 + (2833 + 5667)  # OpenAI's table for 4o-mini
    r = client.post("/v1/models/gpt-4o-mini/estimate", json={"messages": with_parts(*parts)})
    assert r.status_code == 200 and r.json()["input_tokens"] == doc["input_tokens"]
    assert r.json()["exact"] is False


def test_the_patch_rule_and_a_template_model_with_a_fixed_rule(client: TestClient[Any]) -> None:
    plain = count(client, "mini-like", TEXT)["input_tokens"]
    doc = count(client, "mini-like", with_parts(image_part(png(1800, 2400))))
    assert doc["input_tokens"] == plain + 2353  # 1452 patches (OpenAI's example) x 1.62, up
    plain = count(client, "gemma-like", TEXT)
    assert plain["exact"] is True
    doc = count(client, "gemma-like", with_parts(image_part(png(5, 5)), image_part(png(900, 9))))
    assert doc["input_tokens"] == plain["input_tokens"] + 2 * 260
    assert doc["exact"] is False and doc["method"] == "jinja-template"
    assert (
        sum(m["tokens"] for m in doc["messages"])
        + sum(doc["overhead"].values())
        + doc["tools_tokens"]
        == doc["input_tokens"]
    )
    asked = {"return_ids": True, "breakdown": False}
    text_ids = client.post("/v1/models/gemma-like/count", json={"messages": TEXT, **asked})
    assert len(text_ids.json()["ids"]) == plain["input_tokens"]
    ids = client.post(
        "/v1/models/gemma-like/count", json={"messages": with_parts(image_part(png(5, 5))), **asked}
    )
    assert ids.json().get("ids") is None  # an image is not text: no ids to give
    assert ids.json()["overhead"] == {"unattributed": plain["input_tokens"] + 260}


def test_an_anthropic_image_block_counts_by_its_rule(client: TestClient[Any]) -> None:
    """Anthropic's vision page: a 1000x1000 image is ~1334 tokens, 200x200 ~54."""
    body: dict[str, Any] = {
        "model": "claude-like",
        "system": "Describe.",
        "messages": [{"role": "user", "content": "What is this?"}],
    }
    plain = client.post("/v1/messages/count_tokens", json=body).json()["input_tokens"]
    assert plain == count(client, "claude-like", TEXT)["input_tokens"]
    blocks = [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": b64(png(1000, 1000))},
        },
        {
            "type": "image",
            "source": {"type": "url", "url": "https://example.com/a.png"},
            "width": 200,
            "height": 200,
        },
        {
            "type": "image",
            "source": {"type": "file", "file_id": "file_1"},
            "width": 1092,
            "height": 1092,
        },
        {"type": "text", "text": "What is this?"},
    ]
    body["messages"] = [{"role": "user", "content": blocks}]
    r = client.post("/v1/messages/count_tokens", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["input_tokens"] == plain + 1334 + 54 + 1590


def test_a_responses_input_image_counts_by_its_rule(client: TestClient[Any]) -> None:
    text = [{"type": "input_text", "text": "What is this?"}]
    body = {
        "model": "gpt-4o",
        "instructions": "Describe.",
        "input": [{"role": "user", "content": text}],
    }
    plain = client.post("/v1/responses/input_tokens", json=body).json()["input_tokens"]
    assert plain == count(client, "gpt-4o", TEXT)["input_tokens"]
    url = f"data:image/png;base64,{b64(png(1024, 1024))}"
    body["input"] = [
        {
            "role": "user",
            "content": [
                *text,
                {"type": "input_image", "image_url": url},
                {
                    "type": "input_image",
                    "file_id": "file_1",
                    "width": 2048,
                    "height": 4096,
                    "detail": "low",
                },
            ],
        }
    ]
    r = client.post("/v1/responses/input_tokens", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["input_tokens"] == plain + 765 + 85


CUT = b64(png(9, 9))[:20]  # 15 of the PNG's bytes: its IHDR cut off


@pytest.mark.parametrize(
    ("path", "body", "kind", "field"),
    [
        (
            "/v1/models/gpt-4o/count",
            {
                "messages": with_parts(
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
                )
            },
            "invalid-image",
            "content[1].image_url.url",
        ),
        (
            "/v1/models/gpt-4o/count",
            {
                "messages": with_parts(
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + CUT}}
                )
            },
            "invalid-image",
            "content[1].image_url.url",
        ),  # cut short
        (
            "/v1/models/gpt-4o/count",
            {
                "messages": with_parts(
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,not*base64*at*all"},
                    }
                )
            },
            "invalid-image",
            "content[1].image_url.url",
        ),  # garbage
        (
            "/v1/models/qwen3/count",
            {"messages": with_parts(image_part(png(9, 9)))},
            "images-not-counted",
            "content[1]",
        ),
        (
            "/v1/models/gpt-4/estimate",
            {"messages": with_parts(image_part(png(9, 9)))},
            "images-not-counted",
            "content[1]",
        ),
        (
            "/v1/messages/count_tokens",
            {
                "model": "claude-like",
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image", "source": {"type": "base64", "data": "R0lGODlh"}}
                        ],
                    }
                ],
            },
            "invalid-image",
            "content[0].source.data",
        ),  # "GIF89a" and nothing more
        (
            "/v1/responses/input_tokens",
            {
                "model": "gpt-4o",
                "input": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_image", "image_url": "https://example.com/a.png"}
                        ],
                    }
                ],
            },
            "invalid-image",
            "content[0].image_url",
        ),
        (
            "/v1/responses/input_tokens",
            {
                "model": "gpt-4o",
                "input": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": "x"},
                            {"type": "input_image", "file_id": "file_1"},
                        ],
                    }
                ],
            },
            "invalid-image",
            "content[1].file_id",
        ),
        (
            "/v1/messages/count_tokens",
            {
                "model": "claude-like",
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {"type": "file", "file_id": "f"},
                                "width": 9,
                            }
                        ],
                    }
                ],
            },
            "invalid-image",
            "content[0].width",
        ),  # one of the two
    ],
)
def test_bad_images_are_422_naming_the_field(
    client: TestClient[Any], path: str, body: dict[str, Any], kind: str, field: str
) -> None:
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    doc = r.json()
    assert doc["type"] == f"/problems/{kind}" and doc["field"] == field
    if kind == "images-not-counted":
        assert "does not count images" in doc["detail"]


def test_a_huge_base64_image_is_read_by_its_header_alone(client: TestClient[Any]) -> None:
    """6 MB of characters that are not base64 after a PNG header: decoding them would fail, so a
    200 with the header's size shows only the header was decoded."""
    head = b64(png(2048, 4096)[:33])
    url = "data:image/png;base64," + head + "*" * 6_000_000
    plain = count(client, "gpt-4o", TEXT)["input_tokens"]
    doc = count(client, "gpt-4o", with_parts({"type": "image_url", "image_url": {"url": url}}))
    assert doc["input_tokens"] == plain + 1105


def test_a_model_says_how_it_counts_images(client: TestClient[Any]) -> None:
    assert client.get("/v1/models/gpt-4o-mini").json()["images"] == {
        "rule": "openai-tiles",
        "base": 2833,
        "per_tile": 5667,
    }
    assert client.get("/v1/models/gemma-like").json()["images"] == {"rule": "fixed", "tokens": 260}
    assert "images" not in client.get("/v1/models/qwen3").json()


def test_vllm_tokenize_says_images_have_no_ids(client: TestClient[Any]) -> None:
    body = {"model": "gemma-like", "messages": with_parts(image_part(png(5, 5)))}
    r = client.post("/tokenize", json=body)
    assert r.status_code == 422 and r.json()["field"] == "messages"
    assert "images count by an estimate" in r.json()["detail"]
    assert client.post("/tokenize", json={**body, "messages": TEXT}).status_code == 200
