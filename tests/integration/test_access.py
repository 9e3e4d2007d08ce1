"""Optional API keys and CORS over real HTTP (issue 14, "who may call"): both off by default."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.support.server import Server, start_server, stop_server

OLD, NEW = "old-key-0123456789abcdef", "new-key-fedcba9876543210"
ORIGIN = "https://app.example"
COUNT = "/v1/tokenizers/gpt2/count"


@pytest.fixture(scope="module")
def keyed() -> Iterator[Server]:
    s = start_server(1, TOKSVC_API_KEYS=f"old:{OLD},new:{NEW}", TOKSVC_CORS_ORIGINS=ORIGIN)
    yield s
    stop_server(s)


def test_the_api_wants_one_of_the_keys(keyed: Server) -> None:
    url = keyed.base + COUNT
    for headers in ({}, {"authorization": "Bearer wrong-key-0123456789"}, {"x-api-key": "x"}):
        r = httpx.post(url, json={"text": "hi"}, headers=headers)
        assert r.status_code == 401 and r.json()["type"] == "/problems/unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
    for headers in ({"authorization": f"bearer {OLD}"}, {"x-api-key": NEW}):  # rotation: both
        assert httpx.post(url, json={"text": "hi"}, headers=headers).status_code == 200


def test_probes_and_metrics_stay_open(keyed: Server) -> None:
    for path in ("/healthz", "/readyz", "/metrics"):
        assert httpx.get(keyed.base + path).status_code == 200


def test_a_websocket_without_a_key_is_refused(keyed: Server) -> None:
    url = f"ws://127.0.0.1:{keyed.port}/v1/tokenizers/gpt2/decode/ws"
    with pytest.raises(InvalidStatus), connect(url):
        pass
    with connect(url, additional_headers={"x-api-key": NEW}) as ws:
        ws.send('{"ids": [31373], "final": true}')
        assert '"done":true' in str(ws.recv(timeout=10))


def test_cors_answers_the_listed_origin_only(keyed: Server) -> None:
    preflight = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, x-api-key",
    }
    ok = httpx.options(keyed.base + COUNT, headers={"origin": ORIGIN, **preflight})
    assert ok.status_code in (200, 204)
    assert ok.headers["access-control-allow-origin"] == ORIGIN
    other = httpx.options(
        keyed.base + COUNT, headers={"origin": "https://evil.example", **preflight}
    )
    assert other.headers.get("access-control-allow-origin") != "https://evil.example"
    assert other.status_code == 400
    assert other.headers["content-type"].startswith("application/problem+json")
    assert other.json()["type"] == "/problems/invalid-body" and "origin" in other.json()["detail"]
    headers = {"origin": ORIGIN, **preflight, "access-control-request-headers": "x-evil"}
    refused = httpx.options(keyed.base + COUNT, headers=headers)  # a header not allowed
    assert refused.status_code == 400 and "headers" in refused.json()["detail"]


def test_keys_and_cors_are_off_by_default(server: Server) -> None:
    assert httpx.post(server.base + COUNT, json={"text": "hi"}).status_code == 200
    r = httpx.post(server.base + COUNT, json={"text": "hi"}, headers={"origin": ORIGIN})
    assert "access-control-allow-origin" not in r.headers
