"""The OpenAPI document as a reader of the docs page meets it: every operation tagged, summarised
and described, every field described, request examples that the service accepts, and every error
documented as problem+json. Plus the docs pages themselves (offline assets, clean 404s)."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.settings import Settings
from service.store.registry import Registry

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def client(registry: Registry) -> Iterator[TestClient[Any]]:
    with TestClient(create_app(Settings(), registry)) as c:
        yield c


@pytest.fixture(scope="module")
def schema(client: TestClient[Any]) -> dict[str, Any]:
    response = client.get("/schema/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    return document


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, item in schema["paths"].items() for m, op in item.items()]


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_every_operation_has_a_declared_tag_a_summary_and_a_description(
    schema: dict[str, Any],
) -> None:
    declared = {t["name"] for t in schema["tags"]}
    assert all(t.get("description") for t in schema["tags"])
    for method, path, op in operations(schema):
        assert op.get("tags") and set(op["tags"]) <= declared, (method, path)
        assert op.get("summary") and op.get("description"), (method, path)
    used = {t for _, _, op in operations(schema) for t in op["tags"]}
    assert used == declared, "a declared tag with no operation, or the other way round"


def test_every_4xx_and_5xx_response_is_a_problem_document(schema: dict[str, Any]) -> None:
    errors = 0
    for method, path, op in operations(schema):
        for status, response in op["responses"].items():
            if int(status) >= 400:
                errors += 1
                content = response.get("content", {})
                assert list(content) == [PROBLEM], (method, path, status)
                assert content[PROBLEM]["schema"] == {
                    "$ref": "#/components/schemas/ProblemResponse"
                }
    assert errors >= 20
    # the 400 Litestar adds for every route with a parameter is ours too
    assert "400" in schema["paths"]["/v1/tokenizers/{ref}"]["get"]["responses"]


def test_every_field_is_described(schema: dict[str, Any]) -> None:
    for name, component in schema["components"]["schemas"].items():
        assert component.get("description"), name
        for field, prop in component.get("properties", {}).items():
            described = prop.get("description") or "$ref" in prop
            assert described, f"{name}.{field} has no description"


def test_special_tokens_is_a_described_map_of_string_to_id(schema: dict[str, Any]) -> None:
    prop = schema["components"]["schemas"]["TokenizerInfoResponse"]["properties"]["special_tokens"]
    assert prop["type"] == "object" and prop["additionalProperties"] == {"type": "integer"}
    assert prop["description"]
    example = prop["examples"][0]
    assert example and all(isinstance(k, str) and isinstance(v, int) for k, v in example.items())


def test_every_ref_parameter_has_a_description_and_examples(schema: dict[str, Any]) -> None:
    seen = 0
    for _, path, op in operations(schema):
        for parameter in op.get("parameters", []):
            if parameter["name"] == "ref":
                seen += 1
                assert parameter["description"] and parameter["examples"], path
    assert seen == sum("{ref}" in path for _, path, _ in operations(schema))


def body_examples(schema: dict[str, Any]) -> list[tuple[str, str, str, Any, Any]]:
    """(method, path, name, request body, documented 200 body) of every request example."""
    found = []
    for method, path, op in operations(schema):
        media = op.get("requestBody", {}).get("content", {}).get("application/json")
        if media is None:
            continue
        assert media.get("examples"), f"{method} {path} takes a body but shows no example"
        answers = op["responses"]["200"]["content"]["application/json"].get("examples", {})
        for name, example in media["examples"].items():
            assert example["summary"], (path, name)
            answer = answers.get(name, {}).get("value")
            found.append((method, path, name, example["value"], answer))
    return found


def test_every_request_example_gets_the_documented_200(
    client: TestClient[Any], schema: dict[str, Any]
) -> None:
    """What "Try it out" sends (the example body, with either example of `{ref}`) is answered
    with a 200, and the body is the response example of the same name."""
    examples = body_examples(schema)
    assert len(examples) >= 8
    ref = schema["paths"]["/v1/tokenizers/{ref}"]["get"]["parameters"][0]
    refs = [e["value"] for e in ref["examples"].values()]
    model = next(
        p
        for p in schema["paths"]["/v1/models/{model}"]["get"]["parameters"]
        if p["name"] == "model"
    )
    models = [e["value"] for e in model["examples"].values()]
    assert refs and models
    for method, path, name, body, answer in examples:
        assert not ({"text", "texts"} <= body.keys() or {"ids", "batch"} <= body.keys()), name
        assert answer is not None, f"{path}: no response example named {name}"
        for value in models if "{model}" in path else refs:
            url = path.replace("{ref}", value).replace("{model}", value)
            response = client.request(method, url, json=body)
            assert response.status_code == 200, (path, name, value, response.text)
            assert response.json() == answer, (path, name, value)


def test_problem_examples_are_what_the_service_says(
    client: TestClient[Any], schema: dict[str, Any]
) -> None:
    op = schema["paths"]["/v1/tokenizers/{ref}/encode"]["post"]
    shown = {
        status: next(iter(r["content"][PROBLEM]["examples"].values()))["value"]
        for status, r in op["responses"].items()
        if status in {"400", "404", "422"}
    }
    assert len(shown) == 3

    def problem(path: str, body: dict[str, Any]) -> dict[str, Any]:
        said: dict[str, Any] = client.post(path, json=body, headers={"x-request-id": "r-1"}).json()
        assert said.pop("request_id") == "r-1"  # each request's own, so no example shows one
        return said

    assert problem("/v1/tokenizers/cl100k_base/encode", {}) == shown["400"]
    got = problem("/v1/tokenizers/cl100k_base/encode", {"text": "<|endoftext|>"})
    assert got == shown["422"]
    missing = problem("/v1/tokenizers/cl100k/encode", {"text": "a"})
    assert missing.keys() == shown["404"].keys() and missing["type"] == shown["404"]["type"]


def test_invalid_bodies_carry_errors_with_json_paths(client: TestClient[Any]) -> None:
    url = "/v1/tokenizers/cl100k_base/decode"
    cases = [
        ({"ids": [1, "x"]}, "$.ids[1]"),
        ({"ids": [1], "extra": 1}, "$"),
        ({"ids": [1], "batch": [[1]]}, "$"),
    ]
    for body, key in cases:
        response = client.post(url, json=body)
        assert response.status_code == 400, response.text
        assert response.headers["content-type"].startswith(PROBLEM)
        doc = response.json()
        assert doc["type"] == "/problems/invalid-body"
        assert [e["key"] for e in doc["errors"]] == [key], doc
        assert all(e["source"] == "body" and e["message"] for e in doc["errors"])
    query = client.post("/v1/tokenizers/cl100k_base/decode/stream?errors=bogus").json()
    assert query["errors"][0]["key"] == "errors" and query["errors"][0]["source"] == "query"


def test_docs_pages_load_their_assets_from_the_service(client: TestClient[Any]) -> None:
    for page in ("/schema", "/schema/swagger"):
        response = client.get(page)
        assert response.status_code == 200 and "text/html" in response.headers["content-type"]
        html = response.text
        assert "https://" not in html.split("<body>")[0], "the page head loads from elsewhere"
        for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-standalone-preset.js"):
            url = f"/schema/assets/swagger-ui/{asset}"
            assert url in html
            got = client.get(url)
            assert got.status_code == 200 and len(got.content) > 1000, url


OTHER_PAGES = [
    "/schema/redoc",
    "/schema/elements",
    "/schema/rapidoc",
    "/schema/scalar",
    "/schema/assets/swagger-ui/nothing.js",
]


@pytest.mark.parametrize("page", OTHER_PAGES)
def test_other_docs_pages_are_problem_404s(client: TestClient[Any], page: str) -> None:
    response = client.get(page)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith(PROBLEM)
    assert response.json()["type"] == "/problems/not-found"


PAGES = [
    "/schema",
    "/schema/swagger",
    "/schema/openapi.json",
    "/schema/redoc",
    "/playground",
    "/schema/assets/swagger-ui/swagger-ui.css",
    "/playground/assets/main.js",
]


@pytest.mark.parametrize("page", PAGES)
def test_pages_and_their_files_forbid_framing_sniffing_and_other_origins(
    client: TestClient[Any], page: str
) -> None:
    response = client.get(page)
    assert response.headers["x-content-type-options"] == "nosniff"
    policy = dict(
        [*d.split(" ", 1), ""][:2] for d in response.headers["content-security-policy"].split("; ")
    )
    assert policy["default-src"] == "'none'" and policy["frame-ancestors"] == "'none'"
    allowed = {
        name: policy[f"{name}-src"].split() for name in ("script", "style", "connect", "img")
    }
    assert all(s.startswith("'") or s == "data:" for v in allowed.values() for s in v), allowed
    if "text/html" in response.headers["content-type"]:  # each inline block allowed by its hash
        for tag, body in re.findall(r"<(script|style)[^>]*>(.*?)</\1>", response.text, re.S):
            if body.strip():
                digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
                assert f"'sha256-{digest}'" in allowed[tag], tag
