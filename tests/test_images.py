"""Image prices by model family, against the examples OpenAI publishes and recorded bills."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.images import (
    PATCH_RULES,
    TILE_RULES,
    _patches,
    image_cost,
    image_cost_ceiling,
    image_rule,
)


def test_tile_rule_matches_the_published_examples():
    # The vision guide's gpt-4o examples: 1024 x 1024 high is 4 tiles, 2048 x 4096 is 6, low is the base.
    assert image_cost("gpt-4o", 1024, 1024) == 85 + 170 * 4 == 765
    assert image_cost("gpt-4o", 2048, 4096) == 85 + 170 * 6 == 1105
    assert image_cost("gpt-4o", 4096, 8192, detail="low") == 85


def test_patch_rule_matches_the_published_examples():
    # 1024 x 1024: 32 x 32 patches, 1024 of them; 1800 x 2400: scaled to 1056 x 1408, 33 x 44.
    assert _patches(1024, 1024) == 1024
    assert _patches(1800, 2400) == 1452
    assert image_cost("gpt-4.1-mini", 1024, 1024) == 1659  # 1024 x 1.62, rounded up


def test_prices_follow_the_family_not_the_encoding():
    # The same 640 x 480 image on the models of one recorded test suite: each bill less its text
    # (within 2 tokens: gpt-4.1-mini billed 488, gpt-5 349).
    billed = {"gpt-4o": 425, "gpt-4o-mini": 14167, "o4-mini": 516, "gpt-4.1-mini": 486,
              "gpt-5": 350, "gpt-5-mini": 360, "gpt-5-nano": 450}
    assert {model: image_cost(model, 640, 480) for model in billed} == billed


def test_dated_model_names_and_unknown_models():
    assert image_rule("gpt-4o-mini-2024-07-18") == ("tiles", (2833, 5667))
    assert image_rule("gpt-4.1-nano-2025-04-14") == ("patches", 2.46)
    with pytest.raises(ValueError, match="no published image price"):
        image_rule("davinci-002")
    with pytest.raises(ValueError, match="detail"):
        image_cost("gpt-4o", 10, 10, detail="medium")


@settings(max_examples=300, deadline=None)
@given(width=st.integers(1, 20_000), height=st.integers(1, 20_000), model=st.sampled_from(sorted({*TILE_RULES, *PATCH_RULES})),
       detail=st.sampled_from(["auto", "low", "high"]))
def test_no_image_costs_more_than_the_ceiling(width, height, model, detail):
    assert image_cost(model, width, height, detail) <= image_cost_ceiling(model, detail)


@pytest.mark.parametrize("model", sorted({*TILE_RULES, *PATCH_RULES}))
def test_the_ceiling_is_what_some_image_costs(model):
    # 768 x 2048 covers the most tiles (2 x 4); 1536 x 1024 makes the most patches (48 x 32)
    largest = max(image_cost(model, 768, 2048), image_cost(model, 1536, 1024))
    assert image_cost_ceiling(model) == largest
    assert image_cost_ceiling(model, "low") == image_cost(model, 768, 2048, "low")
