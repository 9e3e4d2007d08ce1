"""Metering a decode stream: the running count of ids received and a final usage with the cost
of those ids as output tokens of a named model. Off unless asked (`?usage=true` or `?model=`),
so a stream's lines are unchanged by default."""

from __future__ import annotations

from decimal import Decimal

from service.api.wire.tokens import StreamTextResponse, StreamUsage
from service.models.pricing import MILLION, money
from service.store.modelstore import LoadedModel, LoadedPrice
from service.store.registry import Registry


class Meter:
    def __init__(self, on: bool, model: LoadedModel | None, price: LoadedPrice | None) -> None:
        self.on = on or model is not None
        self.model = model
        self.price = price
        self.count = 0

    def add(self, n_ids: int) -> None:
        self.count += n_ids

    def line(self, text: str) -> StreamTextResponse:
        return StreamTextResponse(text=text, count=self.count if self.on else None)

    def last(
        self,
        text: str,
        reason: str | None = None,
        stop: str | None = None,
        state: str | None = None,
    ) -> StreamTextResponse:
        """The last line; `stop`: the stop string that ended the stream; `state`: where a stream
        cut short resumes."""
        usage = self.usage()
        return StreamTextResponse(
            text=text,
            done=True,
            reason=reason,
            state=state,
            count=None if usage is None else self.count,
            usage=usage,
            stopped=stop is not None,
            stop=stop,
        )

    def usage(self) -> StreamUsage | None:
        """The usage so far (None when metering is off): the last line's, or an error line's."""
        if not self.on:
            return None
        usage = StreamUsage(output_tokens=self.count)
        if self.model is not None and self.price is not None:
            cost = self.count * Decimal(self.price.price.output_per_million) / MILLION
            usage = StreamUsage(
                output_tokens=self.count,
                model=self.model.ref,
                cost=money(cost),
                currency=self.price.currency,
                price_file=self.price.file_ref,
            )
        elif self.model is not None:
            usage = StreamUsage(output_tokens=self.count, model=self.model.ref)
        return usage


def meter_for(registry: Registry, usage: bool, model: str | None) -> Meter:
    """A named model must exist (404 before the stream starts); a missing price leaves the cost
    out of the usage rather than failing a stream that already decoded."""
    if model is None:
        return Meter(usage, None, None)
    loaded = registry.resolve_model(model)
    return Meter(True, loaded, registry.models.prices.get(loaded.name))
