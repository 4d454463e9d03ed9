"""Model providers, and the registry that names them. No provider imports an SDK
(models/http.py says why).

`PROVIDERS` maps `model.provider` to the class that serves it, imported only when that
provider runs: validating inputs and running the scripted provider load no HTTP client.
Adding a provider is one module here, its configuration model in `config/inputs.py`'s
`ModelConfig` union and one line in `PROVIDERS` (docs/architecture.md); nothing here names
a provider otherwise. A configuration with `api_key_env` names the variable that holds its
key, and its class is made as `cls(config, key)`; one without is made as
`cls(config, base_dir=base_dir)` (the scripted provider: a relative script path).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.inputs import ModelConfig, ScriptedModel
from ..errors import InputError

if TYPE_CHECKING:  # `validate` checks the model and builds no provider: base.py is a run's
    from .base import Provider

__all__ = ["build_provider", "check_model", "missing_key_env"]

# model.provider -> "module:Class" of this package; one entry per member of ModelConfig.
PROVIDERS = {
    "scripted": "scripted:ScriptedProvider",
    "openai": "openai:OpenAIProvider",
    "anthropic": "anthropic:AnthropicProvider",
}


def missing_key_env(model_config: ModelConfig, environ: Mapping[str, str]) -> str | None:
    """The name of the API-key variable the provider needs and `environ` lacks (unset or
    empty), or None. A provider whose configuration has no `api_key_env` (the scripted
    one), or has it `null` (a local server), needs none."""
    name = getattr(model_config, "api_key_env", None)
    if not isinstance(name, str):
        return None
    return None if environ.get(name) else name


def check_model(
    model_config: ModelConfig, environ: Mapping[str, str], base_dir: Path | None = None
) -> None:
    """Validation-time checks (`orkeon validate` and `orkeon run` before anything runs):
    the key variable is set; a scripted `script` file or transcript exists and holds a
    valid script. Raises InputError (exit 2) naming the field. Loads no SDK."""
    missing = missing_key_env(model_config, environ)
    if missing:
        raise InputError(f"model.api_key_env: the variable {missing} is not set")
    if isinstance(model_config, ScriptedModel) and isinstance(model_config.script, str):
        from .scripted import load_script

        load_script(model_config.script, base_dir)


def build_provider(
    model_config: ModelConfig,
    *,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> Provider:
    """The provider for `model.*` of the inputs.

    The API key is read here from the variable `api_key_env` names and kept in memory
    only. `base_dir` resolves a relative scripted `script` path (default: the current
    directory). Raises InputError for a missing key or a bad script.
    """
    module, _, name = PROVIDERS[model_config.provider].partition(":")
    cls = getattr(importlib.import_module(f".{module}", __package__), name)
    if not hasattr(model_config, "api_key_env"):  # the scripted model: no key, a script
        provider: Provider = cls(model_config, base_dir=base_dir)
        return provider
    key_env = model_config.api_key_env
    if key_env is None:  # `"api_key_env": null`: a local server that needs no key
        keyless: Provider = cls(model_config, "")
        return keyless
    env = os.environ if environ is None else environ
    missing = missing_key_env(model_config, env)
    if missing:
        raise InputError(f"model.api_key_env: the variable {missing} is not set")
    keyed: Provider = cls(model_config, env[key_env])
    return keyed
