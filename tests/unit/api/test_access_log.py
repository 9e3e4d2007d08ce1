"""The access log's lines, in both formats, and its off switch (in-process; tests/integration/
test_access_log.py reads a real server's stdout)."""

from __future__ import annotations

import json

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.settings import Settings
from service.store.registry import Registry

SECRET = "a body that is never logged"


def _lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


def test_a_json_line_per_request_names_the_route_template(
    registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    app = create_app(Settings(log_format="json"), registry)
    with TestClient(app) as client:
        capsys.readouterr()
        body = {"text": SECRET}
        r = client.post("/v1/tokenizers/gpt2/count", json=body, headers={"x-request-id": "r-1"})
        assert r.status_code == 200
        out = capsys.readouterr().out
    [line] = [json.loads(x) for x in _lines(out)]
    assert line["level"] == "info" and line["time"].endswith("Z")
    assert line["method"] == "POST" and line["route"] == "/v1/tokenizers/{ref}/count"
    assert line["status"] == 200 and line["tokenizer"] == "gpt2"
    assert line["bytes_in"] == len(r.request.content)
    assert line["bytes_out"] == len(r.content)
    assert line["duration_ms"] >= 0 and line["pid"] > 0 and line["request_id"] == "r-1"
    assert SECRET not in out


def test_text_lines_and_unmatched_routes(
    registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    with TestClient(create_app(Settings(), registry)) as client:
        capsys.readouterr()
        assert client.get("/no/such/secret-path").status_code == 404
        out = capsys.readouterr().out
    [line] = _lines(out)
    assert " INFO GET - 404 " in line and "secret-path" not in line
    assert " out=" in line and " pid=" in line and " id=" in line


@pytest.mark.parametrize("settings", [Settings(access_log=False), Settings(log_level="warning")])
def test_the_lines_can_be_turned_off(
    registry: Registry, capsys: pytest.CaptureFixture[str], settings: Settings
) -> None:
    with TestClient(create_app(settings, registry)) as client:
        capsys.readouterr()
        assert client.get("/healthz").status_code == 200
        assert capsys.readouterr().out == ""


def test_the_log_settings_are_read_from_the_environment() -> None:
    env = {"TOKSVC_ACCESS_LOG": "0", "TOKSVC_LOG_LEVEL": "WARNING", "TOKSVC_LOG_FORMAT": "json"}
    s = Settings.from_env(env)
    assert (s.access_log, s.log_level, s.log_format) == (False, "warning", "json")
    assert Settings().access_log is True


def test_a_stream_failure_line_carries_the_request_id(registry: Registry) -> None:
    with TestClient(create_app(Settings(), registry)) as client:
        r = client.post(
            "/v1/tokenizers/gpt2/decode/stream",
            content=b'{"ids": [-1]}\n',
            headers={"x-request-id": "s-1", "content-type": "application/x-ndjson"},
        )
    last = json.loads(r.text.strip().splitlines()[-1])
    assert last["error"]["request_id"] == "s-1"
