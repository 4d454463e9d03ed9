"""The knobs a CI matrix turns without editing JSON (docs/inputs.md, "Knobs"): the model,
the budget's limits and the batch concurrency. Each knob is taken from the first of these
sources that gives it:

  1. the command line: `--model PROVIDER:NAME`, `--max-usd`, `--max-turns`, `--max-tokens`,
     `--max-seconds`, `--max-idle`, `--concurrency`;
  2. the environment: `ORKEON_MODEL`, `ORKEON_MAX_USD`, `ORKEON_MAX_TURNS`,
     `ORKEON_MAX_TOKENS`, `ORKEON_MAX_SECONDS`, `ORKEON_MAX_IDLE`, `ORKEON_CONCURRENCY`
     (empty: not given);
  3. `--inputs`: `model`, `budget.usd`, `budget.turns`, `budget.tokens`, `budget.seconds`,
     `budget.idle_seconds`, `concurrency` (a key the document leaves out is not given;
     `null` is: no limit);
  4. the settings files, `Orkeon:Run:Model`, `MaxUsd`, `MaxTurns`, `MaxTokens`,
     `MaxSeconds`, `MaxIdle`, `Concurrency`: the workspace's `.orkeon/settings.json` when it is
     trusted, then the user's `$ORKEON_CONFIG_DIR/settings.json` (neither in a bare run:
     config/sources.py);
  5. the crew's defaults (its budget; concurrency 4). The model has none: a step's run
     that 1-4 give no model is an input error (run/prepare.py, MODEL_REQUIRED).

pydantic-settings merges sources 1-4 in that order (one custom source each, as in
shell_settings.py); each source first checks its own values, so a bad one names its flag,
variable or file key (exit 2). What no source gives keeps the crew's default.

`resolve` returns the inputs document with the knobs that sources 1, 2 and 4 won written
into it (`model`, `budget`, `concurrency`): the run uses that document, its inputs.json
records it, and so a `--resume` runs with the same knobs (a flag or variable given again
wins again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from ..errors import InputError
from .inputs import PROVIDER_NAMES
from .layered import layered_base
from .sources import Sources
from .trust import read_settings_doc

# knob -> (its flag, its variable, its settings-file key, its key in --inputs)
KNOBS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "model": ("--model", "ORKEON_MODEL", "Model", ("model",)),
    "usd": ("--max-usd", "ORKEON_MAX_USD", "MaxUsd", ("budget", "usd")),
    "turns": ("--max-turns", "ORKEON_MAX_TURNS", "MaxTurns", ("budget", "turns")),
    "tokens": ("--max-tokens", "ORKEON_MAX_TOKENS", "MaxTokens", ("budget", "tokens")),
    "seconds": ("--max-seconds", "ORKEON_MAX_SECONDS", "MaxSeconds", ("budget", "seconds")),
    "idle": ("--max-idle", "ORKEON_MAX_IDLE", "MaxIdle", ("budget", "idle_seconds")),
    "concurrency": ("--concurrency", "ORKEON_CONCURRENCY", "Concurrency", ("concurrency",)),
}
LIMITS = ("usd", "turns", "tokens", "seconds", "idle")
SECTION = ("Orkeon", "Run")
# A model's facts that do not carry over to another model of the same provider.
MODEL_FACTS = ("model", "script", "price", "context_tokens")
NO_LIMIT_WORDS = ("none", "null")


@dataclass(frozen=True)
class Given:
    """One knob's value and where it came from (`--max-usd`, `environment variable
    ORKEON_MAX_USD`, `--inputs`, `FILE: Orkeon:Run:MaxUsd`). A value of its own type,
    not a dict, so that the merge replaces a lower source's value whole."""

    value: Any
    origin: str
    source: str  # "flag", "env", "inputs", "file"


def resolve(
    doc: dict[str, Any],
    *,
    flags: Mapping[str, str | None] | None,
    environ: Mapping[str, str],
    files: tuple[Path | None, ...],
) -> dict[str, Any]:
    """The inputs document `doc` with the knobs that flags, variables or settings files
    give written in. `flags` maps a knob (`usd`, `model`, ...) to the text given on the
    command line; `files` are the settings files, highest precedence first (None: none).
    Raises InputError naming the flag, variable or file key of a bad value."""
    loaders: list[Callable[[], dict[str, Given]]] = [
        lambda: _from_flags(flags or {}),
        lambda: _from_env(environ),
        lambda: _from_inputs(doc),
        *(_file_loader(f) for f in files),
    ]
    if not _outside_sources(flags, environ, files):
        # The common case: only --inputs speaks, and pydantic-settings (~100 ms to import)
        # would have nothing to merge.
        return doc
    merged = _settings_class()(_loaders=loaders)
    winners = {k: getattr(merged, k) for k in KNOBS if getattr(merged, k) is not None}
    return _fold(doc, {k: g for k, g in winners.items() if g.source != "inputs"})


def _outside_sources(
    flags: Mapping[str, str | None] | None,
    environ: Mapping[str, str],
    files: tuple[Path | None, ...],
) -> bool:
    if flags and any(v is not None for v in flags.values()):
        return True
    if any(environ.get(var) for _, var, _, _ in KNOBS.values()):
        return True
    return any(f is not None and f.is_file() for f in files)


def _fold(doc: dict[str, Any], winners: Mapping[str, Given]) -> dict[str, Any]:
    if not winners:
        return doc
    out = dict(doc)
    if "model" in winners:
        out["model"] = model_object(winners["model"].value, doc.get("model"))
    limits = {KNOBS[k][3][-1]: winners[k].value for k in LIMITS if k in winners}
    if limits:
        budget = doc.get("budget")
        out["budget"] = {**(budget if isinstance(budget, dict) else {}), **limits}
    if "concurrency" in winners:
        out["concurrency"] = winners["concurrency"].value
    return out


def model_object(choice: tuple[str, str], given: Any) -> dict[str, Any]:
    """The `model` object for `PROVIDER:NAME`. The inputs' own model object lends its
    connection settings (base_url, api_key_env, timeouts, ...) when it names the same
    provider; its facts about its model (the name, price, context window) never carry."""
    provider, name = choice
    out: dict[str, Any] = {}
    if isinstance(given, dict) and given.get("provider") == provider:
        out = {k: v for k, v in given.items() if k not in MODEL_FACTS}
    out["provider"] = provider
    out["script" if provider == "scripted" else "model"] = name
    return out


# --- each source's values, checked -----------------------------------------------------


def _from_flags(flags: Mapping[str, str | None]) -> dict[str, Given]:
    return {
        k: Given(_check(k, raw, KNOBS[k][0]), KNOBS[k][0], "flag")
        for k, raw in flags.items()
        if raw is not None
    }


def _from_env(environ: Mapping[str, str]) -> dict[str, Given]:
    out = {}
    for knob, (_, var, _, _) in KNOBS.items():
        raw = environ.get(var)
        if raw:  # an empty variable is not given, as in the shell
            where = f"environment variable {var}"
            out[knob] = Given(_check(knob, raw, where), where, "env")
    return out


def _from_inputs(doc: Mapping[str, Any]) -> dict[str, Given]:
    """What the document gives; parse_inputs checks it (and names its fields) later."""
    out = {}
    for knob, (_, _, _, path) in KNOBS.items():
        node: Any = doc
        for key in path:
            node = node.get(key, _MISSING) if isinstance(node, dict) else _MISSING
        if node is not _MISSING:
            out[knob] = Given(node, "--inputs", "inputs")
    return out


def _file_loader(path: Path | None) -> Callable[[], dict[str, Given]]:
    def load() -> dict[str, Given]:
        if path is None or not path.is_file():
            return {}
        out = {}
        for knob, raw in _file_section(path).items():
            where = f"{path}: {':'.join((*SECTION, KNOBS[knob][2]))}"
            out[knob] = Given(_check(knob, raw, where), where, "file")
        return out

    return load


def _file_section(path: Path) -> dict[str, Any]:
    """The `Orkeon:Run` section of a settings file, by knob; key names match without
    regard to case, other keys are ignored (as in the `Orkeon:Tools:Shell` section)."""
    node: Any = read_settings_doc(path)
    for name in SECTION:
        if not isinstance(node, Mapping):
            raise InputError(
                f"{path}: {':'.join(SECTION[: SECTION.index(name)])}: must be an object"
            )
        node = next((v for k, v in node.items() if k.lower() == name.lower()), None)
        if node is None:
            return {}
    if not isinstance(node, Mapping):
        raise InputError(f"{path}: {':'.join(SECTION)}: must be an object")
    keys = {spec[2].lower(): knob for knob, spec in KNOBS.items()}
    return {keys[k.lower()]: v for k, v in node.items() if k.lower() in keys}


def _check(knob: str, raw: Any, where: str) -> Any:
    """The knob's value from `raw` (text from a flag or variable, or a JSON value from a
    file), or InputError naming `where`."""
    if knob == "model":
        return parse_model(raw, where)
    if isinstance(raw, str):
        text = raw.strip()
        if knob in LIMITS and text.lower() in NO_LIMIT_WORDS:
            return None
        raw = text
    elif raw is None and knob in LIMITS:
        return None

    try:
        return _adapters()[knob].validate_python(raw)
    except ValidationError as exc:
        message = exc.errors(include_url=False)[0]["msg"]
        raise InputError(f"{where}: {message}") from None


def parse_model(raw: Any, where: str) -> tuple[str, str]:
    """`PROVIDER:NAME` -> (provider, name): `anthropic:claude-sonnet-4-5`,
    `openai:qwen2.5-coder:32b` (the name may hold colons), `scripted:PATH` (a script file,
    or `scripted:@transcript:PATH`)."""
    provider, sep, name = raw.strip().partition(":") if isinstance(raw, str) else ("", "", "")
    providers = provider_names()
    if not sep or not name.strip() or provider not in providers:
        raise InputError(
            f"{where}: {raw!r} is not PROVIDER:NAME (like anthropic:claude-sonnet-4-5; "
            f"providers: {', '.join(providers)})"
        )
    return provider, name.strip()


@cache
def provider_names() -> tuple[str, ...]:
    """`model.provider`'s values, from the inputs' model union (inputs.ModelConfig)."""
    return PROVIDER_NAMES


@cache
def _adapters() -> dict[str, Any]:
    # The limits as the inputs' `budget` takes them (limits.BudgetLimits), strict about
    # text: "1e3" is a number, "ten" is not, "1.5" is no count of turns.
    return {
        "usd": TypeAdapter(Annotated[float, Field(gt=0, allow_inf_nan=False)]),
        "seconds": TypeAdapter(Annotated[float, Field(gt=0, allow_inf_nan=False)]),
        "idle": TypeAdapter(Annotated[float, Field(gt=0, allow_inf_nan=False)]),
        "turns": TypeAdapter(Annotated[int, Field(ge=1)]),
        "tokens": TypeAdapter(Annotated[int, Field(ge=1)]),
        "concurrency": TypeAdapter(Annotated[int, Field(ge=1, le=64)]),
    }


class _Missing:
    pass


_MISSING = _Missing()


@cache
def _settings_class() -> Any:
    """Built on first use so that importing this module does not import pydantic-settings.
    Its loaders, highest precedence first: flags, environment, --inputs, settings files."""
    from pydantic_settings import SettingsConfigDict

    class Knobs(layered_base()):  # type: ignore[misc]
        # Values arrive checked, each wrapped with its origin (`Given`).
        model_config = SettingsConfigDict(arbitrary_types_allowed=True, frozen=True, extra="ignore")
        model: Given | None = None
        usd: Given | None = None
        turns: Given | None = None
        tokens: Given | None = None
        seconds: Given | None = None
        idle: Given | None = None
        concurrency: Given | None = None

    return Knobs


def settings_files(sources: Sources, *, trusted: bool) -> tuple[Path | None, ...]:
    """The settings files the knobs are read from, highest precedence first: the
    workspace's (only when trusted: a cloned repository must not pick the model or lift the
    budget) and the user's; None where the run's sources read none (config/sources.py)."""
    return (sources.workspace_settings if trusted else None, sources.user_settings)


def flag_values(**given: Any) -> dict[str, str | None]:
    """The command line's knobs by name (`max_usd=` -> `usd`), as text."""
    names = {"model": "model", "max_usd": "usd", "max_turns": "turns", "max_tokens": "tokens",
             "max_seconds": "seconds", "max_idle": "idle",
             "concurrency": "concurrency"}  # fmt: skip
    return {names[k]: None if v is None else str(v) for k, v in given.items() if k in names}


__all__ = [
    "KNOBS",
    "Given",
    "flag_values",
    "model_object",
    "parse_model",
    "resolve",
    "settings_files",
]
