"""The tokens a provider bills for one image of a given size, by the rule it publishes.

Every figure is an estimate (the providers publish the rule, not the code that applies it):

- OpenAI's tile rule, from "Images and vision", Calculating costs
  (https://platform.openai.com/docs/guides/images-vision#calculating-costs): "All images with
  detail: low cost 85 tokens each. detail: high images are first scaled to fit within a 2048 x
  2048 square, maintaining their aspect ratio. Then, they are scaled such that the shortest side
  of the image is 768px long. Finally, we count how many 512px squares the image consists of.
  Each of those squares costs 170 tokens. Another 85 tokens are always added to the final
  total." The 85 and 170 are the model's `base` and `per_tile` (the page's table gives other
  pairs, e.g. 2833 and 5667 for gpt-4o-mini). An image is only ever scaled down: a short side
  under 768 px stays as it is (a 128x64 image bills one tile, as measured against the API).
  `detail: auto` is counted as `high` (the most the model may choose).
- OpenAI's patch rule (same page; GPT-4.1-mini, GPT-4.1-nano, o4-mini): "Calculate the number of
  32px x 32px patches that are needed to fully cover the image"; beyond 1536 patches the image
  is scaled by sqrt(32^2 * 1536 / (width * height)), then further so that a whole number of
  patches covers its limiting side; "the token cost is the number of patches, capped at a
  maximum of 1536 tokens"; the result is multiplied by the model's multiplier (1.62 for
  gpt-4.1-mini, 2.46 for gpt-4.1-nano, 1.72 for o4-mini) and rounded up here (the page does not
  say how). `detail` does not change it.
- Anthropic's rule, from "Vision", Calculate image costs
  (https://docs.anthropic.com/en/docs/build-with-claude/vision): "If your image's long edge is
  more than 1568 pixels, or your image is more than ~1,600 tokens, it will first be scaled down,
  preserving aspect ratio"; then "tokens = (width px * height px)/750", rounded up (the page's
  examples: 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590). The pixel limit is the largest size
  its table lists as not resized (784x1568, 1,229,312 px; the text's ~1,600 tokens is
  approximate: that size is 1,639).
- A fixed count per image. Gemma 3: 260, as its processor (transformers' processing_gemma3.py)
  replaces the `<start_of_image>` its template writes with "\n\n<start_of_image>", 256
  `<image_soft_token>`s and "<end_of_image>\n\n" (each "\n\n" one token).
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

from service.store.formats.model import (
    AnthropicImages,
    FixedImages,
    ImageRule,
    OpenAIPatchImages,
    OpenAITileImages,
)

TILE = 512
TILE_BOX = 2048
SHORT_SIDE = 768
PATCH = 32


def image_tokens(rule: ImageRule, width: int, height: int, detail: str = "auto") -> int:
    """The tokens `rule` bills for a `width` x `height` image (`detail`: low, high or auto)."""
    if isinstance(rule, OpenAITileImages):
        return tiles(rule, width, height, detail)
    if isinstance(rule, OpenAIPatchImages):
        return patches(rule, width, height)
    if isinstance(rule, AnthropicImages):
        return anthropic(rule, width, height)
    assert isinstance(rule, FixedImages)
    return rule.tokens


def tiles(rule: OpenAITileImages, width: int, height: int, detail: str) -> int:
    if detail == "low":
        return rule.base
    w, h = width, height
    if max(w, h) > TILE_BOX:  # into the 2048 square; sizes in whole pixels, rounded down
        w, h = _scaled(w, h, Fraction(TILE_BOX, max(w, h)))
    if min(w, h) > SHORT_SIDE:  # the short side down to 768 (never up)
        w, h = _scaled(w, h, Fraction(SHORT_SIDE, min(w, h)))
    return rule.base + rule.per_tile * -(-w // TILE) * -(-h // TILE)


def _scaled(width: int, height: int, scale: Fraction) -> tuple[int, int]:
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def patch_count(width: int, height: int, max_patches: int) -> int:
    """The 32 px patches that cover the image after the page's scaling, capped at the budget."""
    raw = -(-width // PATCH) * -(-height // PATCH)
    if raw <= max_patches:
        return raw
    shrink = math.sqrt(PATCH * PATCH * max_patches / (width * height))
    # whole patches along the limiting side: scale = floor(side * shrink / 32) * 32 / side
    fits = [(max(1, math.floor(side * shrink / PATCH)) * PATCH, side) for side in (width, height)]
    scale = min(Fraction(n, side) for n, side in fits)
    count = math.ceil(width * scale / PATCH) * math.ceil(height * scale / PATCH)
    return min(count, max_patches)


def patches(rule: OpenAIPatchImages, width: int, height: int) -> int:
    count = patch_count(width, height, rule.max_patches)
    product = count * Decimal(repr(rule.multiplier))  # 1.62 as written, not its binary neighbour
    return int(product.to_integral_value(rounding=ROUND_CEILING))


def anthropic_size(rule: AnthropicImages, width: int, height: int) -> tuple[int, int]:
    """The size Anthropic scales the image to (unchanged when within both limits)."""
    scale = min(
        1.0, rule.max_long_edge / max(width, height), math.sqrt(rule.max_pixels / (width * height))
    )
    if scale >= 1.0:
        return width, height
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def anthropic(rule: AnthropicImages, width: int, height: int) -> int:
    w, h = anthropic_size(rule, width, height)
    return -(-(w * h) // 750)
