"""What a model costs and how much it can read: prices and context windows per model name.

Prices are USD per million tokens (input, output), list prices of the vendors' pricing
pages as of 2026-11. A name matches an entry exactly or as a dated snapshot of it
(`claude-sonnet-4-5-20250929` -> `claude-sonnet-4-5`, `gpt-4o-2024-08-06` -> `gpt-4o`,
`claude-haiku-4-5@20251001`, `...-latest`), and a router prefix (`openai/gpt-4o` on
OpenRouter) is ignored. Other suffixes do not match: `claude-opus-4-7` is not
`claude-opus-4`, and `gpt-5.2` is not `gpt-5`, since their prices differ.
`model.price` and `model.context_tokens` in the inputs override the table.

A model with no known price costs `None`: its turns are counted, their cost is not, and
the result's `budget.usd` is `null` (a `usd` budget cannot be enforced for it).
"""

from __future__ import annotations

import re

from ..inputs import Price

# name: (input USD/MTok, output USD/MTok, context window in tokens)
MODELS: dict[str, tuple[float, float, int]] = {
    # OpenAI (context = the input window)
    "gpt-5.4": (2.50, 15.00, 272_000),
    "gpt-5.1": (1.25, 10.00, 272_000),
    "gpt-5": (1.25, 10.00, 272_000),
    "gpt-5-mini": (0.25, 2.00, 272_000),
    "gpt-5-nano": (0.05, 0.40, 272_000),
    "gpt-4.1": (2.00, 8.00, 1_047_576),
    "gpt-4.1-mini": (0.40, 1.60, 1_047_576),
    "gpt-4.1-nano": (0.10, 0.40, 1_047_576),
    "gpt-4o": (2.50, 10.00, 128_000),
    "gpt-4o-mini": (0.15, 0.60, 128_000),
    "o3": (2.00, 8.00, 200_000),
    "o3-mini": (1.10, 4.40, 200_000),
    "o4-mini": (1.10, 4.40, 200_000),
    # Anthropic
    "claude-fable-5-1": (10.00, 50.00, 1_000_000),
    "claude-opus-5-5": (4.00, 20.00, 1_000_000),
    "claude-opus-5": (5.00, 25.00, 1_000_000),
    "claude-sonnet-5-5": (2.00, 10.00, 1_000_000),
    "claude-opus-4-6": (5.00, 25.00, 1_000_000),
    "claude-sonnet-4-6": (3.00, 15.00, 1_000_000),
    "claude-opus-4-5": (5.00, 25.00, 200_000),
    "claude-sonnet-4-5": (3.00, 15.00, 200_000),
    "claude-haiku-4-5": (1.00, 5.00, 200_000),
    "claude-opus-4-1": (15.00, 75.00, 200_000),
    "claude-opus-4": (15.00, 75.00, 200_000),
    "claude-sonnet-4": (3.00, 15.00, 200_000),
}

DEFAULT_CONTEXT_TOKENS = 128_000
# What may follow an entry's name: a date (4+ digits) or "latest", after "-" or "@".
_SNAPSHOT = re.compile(r"[-@](\d{4,}|latest)([-@:.].*)?")


def lookup(name: str) -> tuple[float, float, int] | None:
    """The table entry for `name`, exact or by the longest entry it extends, or None."""
    if not name:
        return None
    name = name.rsplit("/", 1)[-1].lower()
    if name in MODELS:
        return MODELS[name]
    for key, entry in MODELS.items():
        if name.startswith(key) and _SNAPSHOT.fullmatch(name, len(key)):
            return entry
    return None


def price_for(name: str, override: Price | None = None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens, or None when unknown."""
    if override is not None:
        return (override.input_per_mtok, override.output_per_mtok)
    entry = lookup(name)
    return (entry[0], entry[1]) if entry else None


def context_for(name: str, override: int | None = None) -> int:
    """The model's context window in tokens (the override, the table, or 128000)."""
    if override is not None:
        return override
    entry = lookup(name)
    return entry[2] if entry else DEFAULT_CONTEXT_TOKENS


def cost(price: tuple[float, float] | None, tokens_in: int, tokens_out: int) -> float | None:
    """USD for one turn, or None when the price is unknown."""
    if price is None:
        return None
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
