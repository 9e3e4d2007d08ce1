"""Cost estimates: tokens times the price per 1M tokens, in Decimal (never floats)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from service.errors import ContextOverflowError, PriceMissingError
from service.store.modelstore import LoadedModel, LoadedPrice, ModelTables

MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Estimate:
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    input_cost: Decimal
    cached_input_cost: Decimal
    output_cost: Decimal
    price: LoadedPrice
    remaining_context: int
    max_output_tokens: int  # the model's maximum output, priced apart in `max_output_cost`
    max_output_cost: Decimal

    @property
    def total_cost(self) -> Decimal:
        return self.input_cost + self.cached_input_cost + self.output_cost


def price_of(tables: ModelTables, model: LoadedModel) -> LoadedPrice:
    found = tables.prices.get(model.name)
    if found is None:
        raise PriceMissingError(model.ref, "input/output")
    return found


def estimate(
    tables: ModelTables,
    model: LoadedModel,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int = 0,
) -> Estimate:
    """`cached_input_tokens` is the part of `input_tokens` a prompt cache serves. The cost of the
    model's maximum output is given apart (`max_output_cost`), whatever `output_tokens` is."""
    price = price_of(tables, model)
    needed = input_tokens + output_tokens
    window = model.profile.context_window
    if needed > window:
        raise ContextOverflowError(model.ref, needed, window)
    cached_rate = price.price.cached_input_per_million
    if cached_input_tokens and cached_rate is None:
        raise PriceMissingError(model.ref, "cached input")
    fresh = input_tokens - cached_input_tokens
    output_rate = Decimal(price.price.output_per_million) / MILLION
    return Estimate(
        input_tokens=input_tokens,
        cached_input_tokens=cached_input_tokens,
        output_tokens=output_tokens,
        input_cost=fresh * Decimal(price.price.input_per_million) / MILLION,
        cached_input_cost=cached_input_tokens * Decimal(cached_rate or "0") / MILLION,
        output_cost=output_tokens * output_rate,
        price=price,
        remaining_context=window - needed,
        max_output_tokens=model.profile.max_output_tokens,
        max_output_cost=model.profile.max_output_tokens * output_rate,
    )


def money(value: Decimal) -> str:
    """A decimal string without exponent or trailing zeros (at least one decimal place)."""
    text = format(value.normalize(), "f")
    return text if "." in text else f"{text}.0"
