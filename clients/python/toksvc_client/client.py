"""`Client`: the blocking client (one pooled httpx connection pool, used from any thread)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx

from toksvc_client import calls
from toksvc_client.encoding import Encoding
from toksvc_client.streams import DecodeStream, StreamOptions
from toksvc_client.transport import (
    Answer,
    Call,
    RetryPolicy,
    headers,
    late,
    result,
    timeout_of,
    transport_error,
)
from toksvc_client.wire import (
    ChatCount,
    Chunk,
    Estimate,
    Json,
    ModelInfo,
    TokenizerInfo,
    Truncation,
)

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8000"


class Client:
    """A toksvc service at `base_url`. `api_key` is sent as a bearer token; `timeout` (seconds)
    bounds connecting, each read and write, and the whole answer of each attempt; `retry` says
    how often and how long to retry 503, 429 and refused connections. Use it as a context
    manager, or call `close()`."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        timeout: float | httpx.Timeout = 10.0,
        *,
        retry: RetryPolicy | None = None,
        max_connections: int = 16,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._timeout = timeout_of(timeout)
        self._deadline = max(t or 0.0 for t in self._timeout.as_dict().values()) or None
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers(api_key),
            timeout=self._timeout,
            limits=limits,
            transport=transport,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- sending ---------------------------------------------------------------------------

    def run(self, call: Call[T]) -> T:
        """Send a call by the retry rules (`toksvc_client.transport`); its result or its error."""
        attempt = 1
        while True:
            try:
                answer = self._send(call)
            except httpx.ConnectError as exc:  # nothing was sent: safe to try again
                wait = self.retry.delay(attempt, None)
                if wait is None:
                    raise transport_error(exc, self.base_url + call.path) from None
            except httpx.RequestError as exc:
                raise transport_error(exc, self.base_url + call.path) from None
            else:
                if not answer.retryable:
                    return result(call, answer)
                wait = self.retry.delay(attempt, answer.retry_after)
                if wait is None:
                    return result(call, answer)  # raises its typed error
            time.sleep(wait)
            attempt += 1

    def _send(self, call: Call[Any]) -> Answer:
        started = time.monotonic()
        request = self._http.build_request(call.method, call.path, content=call.body)
        response = self._http.send(request, stream=True)
        try:
            parts = []
            for part in response.iter_bytes():
                parts.append(part)
                if self._deadline and time.monotonic() - started > self._deadline:
                    raise late(self.base_url + call.path)  # a server trickling its answer
            return Answer.of(response, b"".join(parts))
        finally:
            response.close()

    # --- what the service does -------------------------------------------------------------

    def encoding(self, ref: str) -> Encoding:
        """The tokenizer `name` or `name@version`, with tiktoken's Encoding interface."""
        return Encoding(self, calls.EncodingCalls(self.run(calls.tokenizer(ref))))

    def tokenizers(self) -> list[TokenizerInfo]:
        return self.run(calls.tokenizers())

    def models(self) -> list[ModelInfo]:
        return self.run(calls.models())

    def count_chat(
        self,
        model: str,
        messages: Sequence[Json],
        *,
        tools: Sequence[Json] | None = None,
        add_generation_prompt: bool = True,
        chat_template_kwargs: Json | None = None,
        breakdown: bool = False,
    ) -> ChatCount:
        """A conversation's input tokens as `model` is billed for them (OpenAI-style messages)."""
        return self.run(
            calls.count_chat(
                model,
                messages,
                tools=tools,
                add_generation_prompt=add_generation_prompt,
                chat_template_kwargs=chat_template_kwargs,
                breakdown=breakdown,
            )
        )

    def estimate(
        self,
        model: str,
        messages: Sequence[Json] | None = None,
        *,
        text: str | None = None,
        tools: Sequence[Json] | None = None,
        output_tokens: int | None = None,
        max_output_tokens: int | None = None,
        cached_input_tokens: int = 0,
        chat_template_kwargs: Json | None = None,
    ) -> Estimate:
        """Tokens and cost of a request: `messages` or `text`; the output as `output_tokens` (an
        expectation) or `max_output_tokens` (default: the model's maximum)."""
        return self.run(
            calls.estimate(
                model,
                calls.estimate_body(
                    messages=messages,
                    text=text,
                    tools=tools,
                    output_tokens=output_tokens,
                    max_output_tokens=max_output_tokens,
                    cached_input_tokens=cached_input_tokens,
                    chat_template_kwargs=chat_template_kwargs,
                ),
            )
        )

    def truncate(
        self, ref: str, text: str, max_tokens: int, *, keep: Literal["start", "end"] = "start"
    ) -> Truncation:
        return self.run(calls.truncate(ref, text, max_tokens, keep))

    def chunk(self, ref: str, text: str, max_tokens: int, *, overlap: int = 0) -> list[Chunk]:
        return self.run(calls.chunk(ref, text, max_tokens, overlap))

    def decode_stream(
        self,
        ref: str,
        *,
        stop: Sequence[str] | None = None,
        include_stop_str_in_output: bool = False,
        prompt_ids: Sequence[int] | None = None,
        skip_special_tokens: bool = False,
        spaces_between_special_tokens: bool | None = None,
        errors: Literal["strict", "replace"] = "replace",
    ) -> DecodeStream:
        """A streaming decode over the stateless step route (`toksvc_client.streams`)."""
        options = StreamOptions(
            stop=stop,
            include_stop_str_in_output=include_stop_str_in_output,
            prompt_ids=prompt_ids,
            skip_special_tokens=skip_special_tokens,
            spaces_between_special_tokens=spaces_between_special_tokens,
            errors=errors,
        )
        return DecodeStream(self, ref, options)
