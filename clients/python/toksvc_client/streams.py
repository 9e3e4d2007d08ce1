"""Streaming decode over the stateless `decode/step` route: the client carries the opaque `state`
from one step to the next, so any replica can serve any step and no connection is held open.

`feed(ids)` returns the text those ids completed (the bytes of an unfinished character, and any
text that could still be the start of a stop string, are held back by the server in the state);
`finish()` flushes. The stream's options (`stop`, `skip_special_tokens`, ...) go with every step
(the state holds a digest of the stop options, so a step with others is refused); `prompt_ids`
with the first only. Once a stop string completed, `stopped` is true, `stop` names it, and every
later call returns "" without a request.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal

from toksvc_client.errors import StreamClosedError
from toksvc_client.transport import Call, post, segment
from toksvc_client.wire import Json, StepAnswer

if TYPE_CHECKING:
    from toksvc_client.aio import AsyncClient
    from toksvc_client.client import Client


class StreamOptions:
    """What a stream is asked to do; None (or the default) options are not sent."""

    def __init__(
        self,
        *,
        stop: Sequence[str] | None = None,
        include_stop_str_in_output: bool = False,
        prompt_ids: Sequence[int] | None = None,
        skip_special_tokens: bool = False,
        spaces_between_special_tokens: bool | None = None,
        errors: Literal["strict", "replace"] = "replace",
    ) -> None:
        self.every: Json = {
            "errors": errors,
            "stop": None if stop is None else list(stop),
            "include_stop_str_in_output": include_stop_str_in_output or None,
            "skip_special_tokens": skip_special_tokens or None,
            "spaces_between_special_tokens": spaces_between_special_tokens,
        }
        self.first: Json = {"prompt_ids": None if prompt_ids is None else list(prompt_ids)}


class StepState:
    """The stream's bookkeeping, shared by the blocking and the async form."""

    def __init__(self, ref: str, options: StreamOptions) -> None:
        self._path = f"/v1/tokenizers/{segment(ref)}/decode/step"
        self._options = options
        self.state: str | None = None
        self.stopped = False
        self.stop: str | None = None
        self.finished = False

    def call(self, ids: Sequence[int], final: bool) -> Call[StepAnswer] | None:
        """The next step's request; None when the stream already stopped (nothing to ask)."""
        if self.finished:
            raise StreamClosedError("this decode stream is finished; start a new one")
        if final:
            self.finished = True
        if self.stopped:
            return None
        body: Json = {
            "ids": list(ids),
            "state": self.state,
            "final": final or None,
            **self._options.every,
        }
        if self.state is None:
            body.update(self._options.first)
        return post(self._path, body, StepAnswer)

    def take(self, answer: StepAnswer) -> str:
        self.state = answer.state
        if answer.stopped:
            self.stopped, self.stop = True, answer.stop
        return answer.text


class DecodeStream:
    """A streaming decode (blocking): `feed(ids) -> str`, `finish() -> str`."""

    def __init__(self, client: Client, ref: str, options: StreamOptions) -> None:
        self._client = client
        self._steps = StepState(ref, options)

    @property
    def stopped(self) -> bool:
        return self._steps.stopped

    @property
    def stop(self) -> str | None:
        """The stop string that ended the stream, if one did."""
        return self._steps.stop

    def feed(self, ids: Sequence[int]) -> str:
        call = self._steps.call(ids, final=False)
        return "" if call is None else self._steps.take(self._client.run(call))

    def finish(self, ids: Sequence[int] = ()) -> str:
        """The last ids (if any) and whatever was held back."""
        call = self._steps.call(ids, final=True)
        return "" if call is None else self._steps.take(self._client.run(call))

    def assemble(self, chunks: Iterable[Sequence[int]]) -> Iterator[str]:
        """The non-empty texts of every chunk of ids, then the flush; ends early on a stop."""
        for ids in chunks:
            if text := self.feed(ids):
                yield text
            if self.stopped:
                break
        if text := self.finish():
            yield text


class AsyncDecodeStream:
    """A streaming decode (async): `await feed(ids)`, `await finish()`, or `assemble(chunks)` over
    an async iterator of id lists."""

    def __init__(self, client: AsyncClient, ref: str, options: StreamOptions) -> None:
        self._client = client
        self._steps = StepState(ref, options)

    @property
    def stopped(self) -> bool:
        return self._steps.stopped

    @property
    def stop(self) -> str | None:
        return self._steps.stop

    async def feed(self, ids: Sequence[int]) -> str:
        call = self._steps.call(ids, final=False)
        return "" if call is None else self._steps.take(await self._client.run(call))

    async def finish(self, ids: Sequence[int] = ()) -> str:
        call = self._steps.call(ids, final=True)
        return "" if call is None else self._steps.take(await self._client.run(call))

    async def assemble(self, chunks: AsyncIterable[Sequence[int]]) -> AsyncIterator[str]:
        """The non-empty texts of every chunk of ids as they arrive, then the flush; ends early
        (without reading further chunks) once a stop string completed."""
        async for ids in chunks:
            if text := await self.feed(ids):
                yield text
            if self.stopped:
                break
        if text := await self.finish():
            yield text
