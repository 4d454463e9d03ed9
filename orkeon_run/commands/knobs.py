"""The knob options of `orkeon run` (`--model`, `--max-usd`, ...; docs/inputs.md, "Knobs").

Taken as text and checked with the knobs' other sources (config/run_settings.py), so a bad
value names its flag as a bad variable names its variable. cli.py puts them on `run`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer


def _knob(flag: str, metavar: str, text: str) -> Any:
    return typer.Option(flag, metavar=metavar, help=text)


ModelOpt = Annotated[
    str | None,
    _knob(
        "--model", "PROVIDER:NAME", "The model, e.g. anthropic:claude-sonnet-4-5 (or ORKEON_MODEL)."
    ),
]
MaxUsdOpt = Annotated[
    str | None, _knob("--max-usd", "USD", "Cost limit; none: no limit (or ORKEON_MAX_USD).")
]
MaxTurnsOpt = Annotated[
    str | None, _knob("--max-turns", "N", "Model answers limit (or ORKEON_MAX_TURNS).")
]
MaxTokensOpt = Annotated[
    str | None,
    _knob("--max-tokens", "N", "Tokens limit, in plus out (or ORKEON_MAX_TOKENS)."),
]
MaxSecondsOpt = Annotated[
    str | None,
    _knob("--max-seconds", "SECONDS", "Time limit, charged seconds (or ORKEON_MAX_SECONDS)."),
]
MaxIdleOpt = Annotated[
    str | None,
    _knob(
        "--max-idle",
        "SECONDS",
        "No-progress watchdog: silence from a model, tool, hook or MCP call that ends the "
        "role; none: off (or ORKEON_MAX_IDLE; default 600).",
    ),
]
ConcurrencyOpt = Annotated[
    str | None,
    _knob("--concurrency", "N", "Roles of a batch at a time, 1-64 (or ORKEON_CONCURRENCY)."),
]
