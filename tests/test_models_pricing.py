"""Prices and context windows per model name (orkeon_run/models/pricing.py)."""

from __future__ import annotations

import pytest

from orkeon_run.inputs import Price
from orkeon_run.models.pricing import DEFAULT_CONTEXT_TOKENS, context_for, cost, lookup, price_for


@pytest.mark.parametrize(
    ("name", "entry"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-haiku-4-5@20251001", "claude-haiku-4-5"),
        ("CLAUDE-OPUS-4-6", "claude-opus-4-6"),
    ],
)
def test_names_match_their_entry(name: str, entry: str) -> None:
    assert lookup(name) == lookup(entry) is not None


@pytest.mark.parametrize(
    "name", ["claude-opus-4-7", "gpt-5.2", "gpt-4", "llama3:8b", "", "gpt-4o-audio"]
)
def test_other_names_have_no_entry(name: str) -> None:
    """A newer version is not priced as an older one (their prices differ)."""
    assert lookup(name) is None


def test_price_table_and_override() -> None:
    assert price_for("gpt-4o-mini") == (0.15, 0.60)
    assert price_for("claude-sonnet-4-6") == (3.0, 15.0)
    assert price_for("my-model") is None
    assert price_for("my-model", Price(input_per_mtok=1, output_per_mtok=2)) == (1, 2)
    assert price_for("gpt-4o", Price(input_per_mtok=0, output_per_mtok=0)) == (0, 0)


def test_context_window_table_override_and_default() -> None:
    assert context_for("gpt-4o") == 128_000
    assert context_for("claude-sonnet-4-6") == 1_000_000
    assert context_for("gpt-4o", 8_000) == 8_000
    assert context_for("qwen2.5-coder:7b") == DEFAULT_CONTEXT_TOKENS == 128_000


def test_cost() -> None:
    assert cost((3.0, 15.0), 1_000_000, 100_000) == pytest.approx(4.5)
    assert cost(None, 10, 10) is None
    assert cost((3.0, 15.0), 0, 0) == 0.0
