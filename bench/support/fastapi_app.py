"""The peer of issue 10's HTTP comparison: a token-count service written the obvious way with
FastAPI and tiktoken, served by uvicorn with as many workers as toksvc gets.

    uvicorn bench.support.fastapi_app:app --workers 2 --host 127.0.0.1 --port 8001
    curl -s 127.0.0.1:8001/v1/tokenizers/cl100k_base/count -H 'content-type: application/json' \\
         -d '{"text": "hello world"}'                     # {"count":2}

Same route and bodies as toksvc's count (POST /v1/tokenizers/{ref}/count, {"text": ...} ->
{"count": n}), so bench/bench_service.py drives both with the same wrk script. The encodings
come from `tiktoken.get_encoding`, as a user would write it; nothing is downloaded: the local
copies in $TOKSVC_SHARED/vocab (../shared by default) are checked against the sha256 tiktoken
expects and placed in a private TIKTOKEN_CACHE_DIR first.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))
URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
EXPECTED_SHA256 = {  # tiktoken_ext/openai_public.py
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


def offline_cache() -> str:
    """A TIKTOKEN_CACHE_DIR holding the local encodings under the names tiktoken looks for (the
    sha1 of their URL), each checked against the sha256 tiktoken expects: tiktoken would download
    a missing or different file, and this service must not."""
    cache = Path(tempfile.gettempdir()) / f"fastapi-tiktoken-cache-{os.getuid()}"
    cache.mkdir(mode=0o700, exist_ok=True)
    for name, sha256 in EXPECTED_SHA256.items():
        data = (SHARED / "vocab" / f"{name}.tiktoken").read_bytes()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise SystemExit(f"{SHARED}/vocab/{name}.tiktoken is not the file tiktoken expects")
        target = cache / hashlib.sha1(URL.format(name).encode()).hexdigest()
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)  # atomic: workers start side by side
    return str(cache)


os.environ["TIKTOKEN_CACHE_DIR"] = offline_cache()

import tiktoken  # noqa: E402 (reads TIKTOKEN_CACHE_DIR)
from fastapi import FastAPI, HTTPException  # noqa: E402
from pydantic import BaseModel  # noqa: E402

ENCODINGS = {name: tiktoken.get_encoding(name) for name in EXPECTED_SHA256}

app = FastAPI(title="fastapi + tiktoken")


class CountRequest(BaseModel):
    text: str


class CountResponse(BaseModel):
    count: int


@app.post("/v1/tokenizers/{ref}/count")
async def count(ref: str, body: CountRequest) -> CountResponse:
    encoding = ENCODINGS.get(ref)
    if encoding is None:
        raise HTTPException(status_code=404, detail=f"unknown tokenizer {ref}")
    return CountResponse(count=len(encoding.encode_ordinary(body.text)))
