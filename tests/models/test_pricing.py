"""Prices and context windows (orkeon_run/models/pricing.py): the genai-prices database,
`model.price` overrides, and the input check that a `usd` budget has a price to hold."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kit.process import orkeon
from kit.steps import environ

from orkeon_run.config.inputs import AnthropicModel, OpenAIModel, ScriptedModel
from orkeon_run.errors import InputError
from orkeon_run.models.pricing import (
    DEFAULT_CONTEXT_TOKENS,
    FREE,
    Listed,
    Rates,
    check_price,
    context_for,
    cost,
    listed,
    price_for,
)

M = 1_000_000


def openai(model: str, **extra: Any) -> OpenAIModel:
    return OpenAIModel(provider="openai", model=model, **extra)


def anthropic(model: str, **extra: Any) -> AnthropicModel:
    return AnthropicModel(provider="anthropic", model=model, **extra)


def list_price(found: tuple[Any, Any]) -> Any:
    """The database's price entry in force today (what `Listed` charges)."""
    return found[1].get_prices(datetime.now(tz=UTC))


@pytest.mark.parametrize(
    ("protocol", "name", "entry"),
    [
        ("openai", "gpt-4o", "gpt-4o"),
        ("openai", "gpt-4o-2024-08-06", "gpt-4o"),
        ("openai", "openai/gpt-4o-mini", "gpt-4o-mini"),
        ("openai", "GPT-4o-mini", "gpt-4o-mini"),
        ("anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic", "claude-haiku-4-5@20251001", "claude-haiku-4-5"),
        ("anthropic", "claude-sonnet-4-6", "claude-sonnet-4-6"),
        # a gateway speaking the OpenAI protocol for a Claude model: Anthropic's price
        ("openai", "claude-sonnet-4-6", "claude-sonnet-4-6"),
    ],
)
def test_names_match_their_database_entry(protocol: str, name: str, entry: str) -> None:
    found = listed(protocol, name)
    assert found is not None and found[1].id == entry


@pytest.mark.parametrize("name", ["llama3:8b", "qwen2.5-coder:7b", "my-finetune", "gpt-4o-audio"])
def test_other_names_have_no_price(name: str) -> None:
    """A local model gets no cloud host's price for a model of the same name."""
    assert listed("openai", name, "http://127.0.0.1:8080/v1") is None
    assert price_for(openai(name, base_url="http://127.0.0.1:8080/v1")) is None
    assert listed("openai", "") is None


@pytest.mark.parametrize(
    ("url", "public"),
    [("http://127.0.0.1:8080/v1", False), ("http://localhost:11434/v1", False),
     ("http://[::1]:9/v1", False), ("http://10.1.2.3/v1", False), ("http://ollama.localhost", False),
     ("https://openrouter.ai/api/v1", True), ("https://8.8.8.8/v1", True), (None, False)],
)  # fmt: skip
def test_a_local_base_url_is_no_providers(url: str | None, public: bool) -> None:
    """docs/inputs.md: "a loopback or private address, or `localhost`, belongs to none and
    is not looked up" (every provider's URL pattern is not compiled for it); the model is
    still priced from the protocol's own API."""
    from orkeon_run.models.pricing import _public

    assert _public(url) is public
    found = listed("anthropic", "claude-sonnet-4-6", "http://127.0.0.1:8080")
    assert found is not None and found[0].id == "anthropic"


def test_a_known_router_url_prices_with_that_router() -> None:
    found = listed("openai", "openai/gpt-4o-mini", "https://openrouter.ai/api/v1")
    assert found is not None and found[0].id == "openrouter"
    assert listed("openai", "gpt-4o-mini")[0].id == "openai"  # type: ignore[index]


def test_cache_reads_and_writes_are_priced_at_their_own_rates() -> None:
    found = listed("anthropic", "claude-sonnet-4-6")
    assert found is not None
    p = list_price(found)
    rates = {
        k: float(getattr(p, k))
        for k in ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")
    }
    # the cache's rates differ from the input rate, or this test shows nothing
    assert rates["cache_read_mtok"] < rates["input_mtok"] < rates["cache_write_mtok"]
    price = Listed(*found)
    assert price.usd(M, 0, 0, 0) == pytest.approx(rates["input_mtok"])
    assert price.usd(M, 0, M, 0) == pytest.approx(rates["cache_read_mtok"])
    assert price.usd(M, 0, 0, M) == pytest.approx(rates["cache_write_mtok"])
    assert price.usd(3 * M, M, M, M) == pytest.approx(sum(rates.values()))


def test_openai_cached_tokens_are_priced_at_the_cached_rate() -> None:
    found = listed("openai", "gpt-4o-mini")
    assert found is not None
    p = list_price(found)
    assert float(p.cache_read_mtok) < float(p.input_mtok)
    usd = cost(price_for(openai("gpt-4o-mini")), 2 * M, 0, cache_read=M)
    assert usd == pytest.approx(float(p.input_mtok) + float(p.cache_read_mtok))


def test_a_long_prompt_pays_its_tier() -> None:
    """Tiers (a prompt over 200k tokens costs more per token on some models) come from
    the database, which a two-number table could not say."""
    price = price_for(anthropic("claude-sonnet-4-5"))
    assert price is not None
    short, long = price.usd(100_000, 0, 0, 0) / 100_000, price.usd(300_000, 0, 0, 0) / 300_000
    assert long > short


def test_model_price_overrides_the_database() -> None:
    given = {"input_per_mtok": 2, "output_per_mtok": 8}
    price = price_for(anthropic("claude-sonnet-4-6", price=given))
    assert isinstance(price, Rates)
    # cache prices left out: the input price
    assert price == Rates(2, 8, 2, 2)
    assert price.usd(M, M, M // 2, 0) == pytest.approx(10.0)
    full = {**given, "cache_read_per_mtok": 0.2, "cache_write_per_mtok": 2.5}
    price = price_for(openai("my-model", price=full))
    assert price == Rates(2, 8, 0.2, 2.5)
    # 1M input of which 600k read and 200k written, 100k output
    assert price.usd(M, 100_000, 600_000, 200_000) == pytest.approx(0.4 + 0.12 + 0.5 + 0.8)


def test_scripted_costs_nothing_unless_priced() -> None:
    assert price_for(ScriptedModel(provider="scripted")) is FREE
    priced = ScriptedModel(provider="scripted", price={"input_per_mtok": 1, "output_per_mtok": 2})
    assert price_for(priced) == Rates(1, 2, 1, 1)
    assert cost(None, 10, 10) is None


def test_context_windows() -> None:
    assert context_for(openai("gpt-4o")) == 128_000
    assert context_for(anthropic("claude-sonnet-4-6")) == 1_000_000
    assert context_for(openai("gpt-4o", context_tokens=8000)) == 8000
    assert context_for(openai("qwen2.5-coder:7b")) == DEFAULT_CONTEXT_TOKENS == 128_000
    assert context_for(ScriptedModel(provider="scripted")) == DEFAULT_CONTEXT_TOKENS


def test_check_price_names_model_price() -> None:
    check_price(openai("gpt-4o"))
    check_price(openai("my-model", price={"input_per_mtok": 0, "output_per_mtok": 0}))
    check_price(ScriptedModel(provider="scripted"))
    with pytest.raises(InputError) as err:
        check_price(openai("my-model", base_url="http://127.0.0.1:8080/v1"))
    [line] = err.value.problems
    assert line.startswith("model.price: no price is known for openai model 'my-model'")


def orkeon_validate(tmp_path: Path, doc: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = environ(tmp_path, OPENAI_API_KEY="sk-test")
    return orkeon("validate", "--inputs", json.dumps(doc), cwd=tmp_path, env=env)


def test_a_usd_budget_without_a_price_is_exit_2(tmp_path: Path) -> None:
    model = {"provider": "openai", "model": "my-model", "base_url": "http://127.0.0.1:9/v1"}
    out = orkeon_validate(tmp_path, {"model": model, "budget": {"usd": 1}})
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines() == [
        "orkeon: model.price: no price is known for openai model 'my-model', so the usd "
        'budget cannot be held; give "price": {"input_per_mtok": USD, "output_per_mtok": '
        "USD} (per million tokens)"
    ]
    assert orkeon_validate(tmp_path, {"model": model}).returncode == 0  # no usd budget
    priced = {**model, "price": {"input_per_mtok": 1, "output_per_mtok": 2}}
    assert orkeon_validate(tmp_path, {"model": priced, "budget": {"usd": 1}}).returncode == 0
    known = {"provider": "openai", "model": "gpt-4o-mini"}
    assert orkeon_validate(tmp_path, {"model": known, "budget": {"usd": 1}}).returncode == 0
