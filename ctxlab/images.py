"""What an image in a prompt costs, by model family.

OpenAI prices image input by two published rules (the "Calculating costs" section of
https://platform.openai.com/docs/guides/images-vision, as of 2025):

* **tiles** (gpt-4o, gpt-4.1, gpt-4o-mini, gpt-5, o1, o3, gpt-4 with vision): the image is
  scaled to fit 2048 x 2048, then so its shorter side is at most 768; it costs a base plus a
  price per 512 x 512 tile it covers. ``detail="low"`` costs the base alone. The base and tile
  differ by model: gpt-4o-mini's are 2833 and 5667, 33 times gpt-4o's 85 and 170, which is why an
  image is dearer in tokens on the cheaper model.
* **patches** (gpt-4.1-mini, gpt-4.1-nano, o4-mini, gpt-5-mini, gpt-5-nano): the image is cut into
  32 x 32 patches (scaled down until at most 1,536 fit) and costs the patches times a multiplier.

The table below is the published one, except gpt-5-mini and gpt-5-nano, whose recorded bills
(``tests/test_billing.py``) show multipliers of 1.2 and 1.5 for a 640 x 480 image.

>>> image_cost("gpt-4o", 640, 480), image_cost("gpt-4o-mini", 640, 480), image_cost("o4-mini", 640, 480)
(425, 14167, 516)
>>> image_cost("gpt-4o", 640, 480, detail="low"), image_cost("gpt-5", 1, 1)
(85, 210)
"""

from __future__ import annotations

import math

from .errors import ConfigError

__all__ = ["TILE_RULES", "PATCH_RULES", "MAX_TILES", "image_cost", "image_cost_ceiling", "image_rule"]

TILE_RULES: dict[str, tuple[int, int]] = {
    "gpt-4o-mini": (2833, 5667),
    "gpt-4o": (85, 170),
    "gpt-4.1": (85, 170),
    "gpt-4.5": (85, 170),
    "gpt-4": (85, 170),
    "gpt-5": (70, 140),
    "o1": (75, 150),
    "o3": (75, 150),
    "computer-use-preview": (65, 129),
}
"""(base, per tile) of the tile-priced families, by model name prefix."""

PATCH_RULES: dict[str, float] = {
    "gpt-4.1-mini": 1.62,
    "gpt-4.1-nano": 2.46,
    "o4-mini": 1.72,
    "gpt-5-mini": 1.2,
    "gpt-5-nano": 1.5,
}
"""The multiplier of the patch-priced families, by model name prefix."""

MAX_PATCHES = 1536
MAX_TILES = 8
"""The most 512 x 512 tiles an image can cover once scaled: its shorter side at most 768 (2
tiles) and its longer at most 2048 (4 tiles), as a 768 x 2048 image does."""
DETAILS = ("auto", "low", "high")


def image_rule(model: str) -> tuple[str, tuple[int, int] | float]:
    """``("patches", multiplier)`` or ``("tiles", (base, tile))`` for ``model``, by the longest
    matching prefix of the tables.

    >>> image_rule("gpt-4o-mini-2024-07-18"), image_rule("gpt-5-nano")
    (('tiles', (2833, 5667)), ('patches', 1.5))
    """
    patch = max((p for p in PATCH_RULES if model.startswith(p)), key=len, default=None)
    tile = max((p for p in TILE_RULES if model.startswith(p)), key=len, default=None)
    if patch is not None and (tile is None or len(patch) >= len(tile)):
        return "patches", PATCH_RULES[patch]
    if tile is not None:
        return "tiles", TILE_RULES[tile]
    raise ConfigError(
        f"no published image price for model {model!r}: ctxlab knows "
        f"{', '.join(sorted({*TILE_RULES, *PATCH_RULES}))}"
    )


def _tiles(width: float, height: float) -> int:
    scale = min(1.0, 2048 / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    return math.ceil(width * scale / 512) * math.ceil(height * scale / 512)


def _patches(width: float, height: float) -> int:
    patches = math.ceil(width / 32) * math.ceil(height / 32)
    if patches <= MAX_PATCHES:
        return patches
    shrink = math.sqrt(32 * 32 * MAX_PATCHES / (width * height))
    width, height = width * shrink, height * shrink
    fit = min(math.floor(width / 32) / (width / 32), math.floor(height / 32) / (height / 32))
    width, height = round(width * fit), round(height * fit)  # whole pixels, as the guide's example
    return min(MAX_PATCHES, math.ceil(width / 32) * math.ceil(height / 32))


def image_cost(model: str, width: int, height: int, detail: str = "auto") -> int:
    """Tokens one ``width`` x ``height`` image costs ``model`` (``"auto"`` counts as ``"high"``,
    the most it can cost; patch-priced models ignore ``detail``)."""
    if detail not in DETAILS:
        raise ConfigError(f"detail must be one of {', '.join(DETAILS)}, got {detail!r}")
    if width <= 0 or height <= 0:
        raise ConfigError(f"an image needs a positive size, got {width} x {height}")
    kind, rule = image_rule(model)
    if kind == "patches":
        return math.ceil(round(_patches(width, height) * rule, 6))  # 300 x 1.62 is 486, not 487
    base, tile = rule
    return base if detail == "low" else base + tile * _tiles(width, height)


def image_cost_ceiling(model: str, detail: str = "auto") -> int:
    """The most one image of any size can cost ``model``: what an image whose size is not known
    (one given by URL) is counted at, so that a budget built on it stays safe.

    >>> image_cost_ceiling("gpt-4o"), image_cost_ceiling("gpt-4o", "low"), image_cost_ceiling("gpt-4.1-mini")
    (1445, 85, 2489)
    """
    if detail not in DETAILS:
        raise ConfigError(f"detail must be one of {', '.join(DETAILS)}, got {detail!r}")
    kind, rule = image_rule(model)
    if kind == "patches":
        return math.ceil(round(MAX_PATCHES * rule, 6))
    base, tile = rule
    return base if detail == "low" else base + tile * MAX_TILES
