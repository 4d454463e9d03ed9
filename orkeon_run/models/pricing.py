"""What a model's tokens cost and how much it can read: prices and context windows.

Prices come from genai-prices, the price database pydantic maintains (pyproject.toml says
why this one), as installed: it is never updated over the network. A price there knows
cache reads and writes, a model's price changes by date, and the tiers where a long prompt
costs more per token. `model.price` in the inputs overrides it (`Rates`).

Which entry prices a model (`listed`): the provider the base URL belongs to, when the
database knows that URL (OpenRouter, Together, Groq, Azure, ...; a loopback or private
address is no provider's, and is not looked for); then the official API of
the protocol spoken (OpenAI for `openai`, Anthropic for `anthropic`), then the other one.
A name matches as the database matches it (`claude-sonnet-4-5-20250929` is
`claude-sonnet-4-5`), and a router prefix (`openai/gpt-4o`) is dropped when the whole
name is not known. Nothing else is guessed: a local `qwen2.5-coder:7b` has no price,
rather than some cloud host's price for a model of that name.

A model with no price costs None: its turns are counted, their cost is not, and a `usd`
budget cannot be enforced for it (`prepare.py` refuses that combination: `check_price`).
The database (some 30,000 lines of data) is imported only when a price or a context
window is asked for, never by `orkeon validate` without a `usd` budget nor by a scripted run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..config.inputs import ModelConfig, Price, ScriptedModel
from ..errors import InputError

DEFAULT_CONTEXT_TOKENS = 128_000
# The official APIs of the two protocols orkeon speaks (genai-prices' provider ids).
OFFICIAL = ("openai", "anthropic")


class Pricer(Protocol):
    def usd(self, tokens_in: int, tokens_out: int, cache_read: int, cache_write: int) -> float:
        """USD for one answer. `tokens_in` counts every input token; `cache_read` and
        `cache_write` are the parts of it read from and written to the prompt cache."""
        ...


@dataclass(frozen=True)
class Rates:
    """Fixed prices in USD per million tokens (`model.price`, or a scripted model's 0)."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    @classmethod
    def of(cls, price: Price) -> Rates:
        """`model.price`: a cache price it leaves out is the input price (no discount and
        no premium assumed)."""
        read = price.cache_read_per_mtok
        write = price.cache_write_per_mtok
        return cls(
            price.input_per_mtok,
            price.output_per_mtok,
            price.input_per_mtok if read is None else read,
            price.input_per_mtok if write is None else write,
        )

    def usd(self, tokens_in: int, tokens_out: int, cache_read: int, cache_write: int) -> float:
        fresh = max(0, tokens_in - cache_read - cache_write)
        return (
            fresh * self.input
            + cache_read * self.cache_read
            + cache_write * self.cache_write
            + tokens_out * self.output
        ) / 1_000_000


FREE = Rates(0.0, 0.0, 0.0, 0.0)


class Listed:
    """A price from the database (its tiers and dated changes applied by genai-prices)."""

    def __init__(self, provider: Any, model: Any) -> None:
        self.provider = provider
        self.model = model

    def usd(self, tokens_in: int, tokens_out: int, cache_read: int, cache_write: int) -> float:
        from genai_prices.types import Usage

        # A server may report more cached tokens than input tokens: the parts cannot
        # exceed the whole (genai-prices refuses such a usage).
        cache_read = min(cache_read, tokens_in)
        cache_write = min(cache_write, tokens_in - cache_read)
        usage = Usage(
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        )
        return float(self.model.calc_price(usage, self.provider).total_price)

    def __repr__(self) -> str:
        return f"Listed({self.provider.id}/{self.model.id})"


def listed(protocol: str, model: str, base_url: str | None = None) -> tuple[Any, Any] | None:
    """(genai-prices provider, model info) for `model` spoken to with `protocol` at
    `base_url`, or None (see the module's docstring for the order)."""
    if not model:
        return None
    from genai_prices.data_snapshot import get_snapshot

    snapshot = get_snapshot()
    wanted: list[tuple[str | None, str | None]] = [(None, base_url)] if _public(base_url) else []
    wanted += [(pid, None) for pid in sorted(OFFICIAL, key=lambda p: p != protocol)]
    providers: list[Any] = []
    for pid, url in wanted:
        try:
            found = snapshot.find_provider(None, pid, url)
        except LookupError:
            continue
        if found not in providers:
            providers.append(found)
    names = [model.lower()]
    if "/" in model:
        names.append(names[0].rsplit("/", 1)[-1])
    for provider in providers:
        for name in names:
            info = provider.find_model(name, all_providers=snapshot.providers)
            if info is not None:
                return provider, info
    return None


def _public(base_url: str | None) -> bool:
    """Whether `base_url` may be a listed provider's API: not a loopback, private or
    link-local address, nor `localhost` (a local server or a test's fake), whose URL no
    provider of the database has; matching it against every provider's URL pattern
    compiles some 50 regular expressions (docs/performance.md)."""
    if not base_url:
        return False
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(base_url).hostname or "").rstrip(".").lower()
    except ValueError:
        return True
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        return ipaddress.ip_address(host).is_global
    except ValueError:  # a name: only its owner knows where it points
        return True


def _listed_for(config: ModelConfig) -> tuple[Any, Any] | None:
    """The database's entry for a configuration that names a model (`model`, and maybe
    `base_url`); None for one that names none (the scripted provider)."""
    model = getattr(config, "model", None)
    if not isinstance(model, str):
        return None
    return listed(config.provider, model, getattr(config, "base_url", None))


def price_for(config: ModelConfig) -> Pricer | None:
    """The model's price: `model.price`, else the database's, else None (a scripted model
    costs 0 unless `model.price` says otherwise)."""
    if config.price is not None:
        return Rates.of(config.price)
    if isinstance(config, ScriptedModel):
        return FREE
    found = _listed_for(config)
    return Listed(*found) if found else None


def context_for(config: ModelConfig) -> int:
    """The model's context window in tokens: `model.context_tokens`, else the database's,
    else 128000."""
    if config.context_tokens is not None:
        return config.context_tokens
    found = _listed_for(config)
    if found is not None and found[1].context_window:
        return int(found[1].context_window)
    return DEFAULT_CONTEXT_TOKENS


def check_price(config: ModelConfig) -> None:
    """InputError (exit 2) naming `model.price` when no price is known for the model (a
    `usd` budget could not hold)."""
    if price_for(config) is None:
        name = getattr(config, "model", "")
        raise InputError(
            f"model.price: no price is known for {config.provider} model {name!r}, so the "
            'usd budget cannot be held; give "price": {"input_per_mtok": USD, '
            '"output_per_mtok": USD} (per million tokens)'
        )


def cost(
    price: Pricer | None,
    tokens_in: int,
    tokens_out: int,
    cache_read: int = 0,
    cache_write: int = 0,
) -> float | None:
    """USD for one answer, or None when the price is unknown."""
    if price is None:
        return None
    return price.usd(tokens_in, tokens_out, cache_read, cache_write)
