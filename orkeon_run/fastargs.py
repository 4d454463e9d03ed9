"""The fast path for the two commands CI runs most: `orkeon run` and `orkeon validate`.

typer costs 50-90 ms of every start (its import, then pydantic adapters built to coerce
each parameter); these commands take only strings and choices, so a plain command line is
parsed here instead. Anything else (help, an unknown or repeated option, a missing value, a
value that looks like an option, a choice not on the list, `--`) returns None and goes to
the typer app, which owns every message about a bad command line. A test holds the two
parsers to the same answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class _Command:
    positional: tuple[str, ...]  # names, in order, each required
    options: dict[str, str]  # "--run-dir" -> "run_dir"
    required: tuple[str, ...]
    choices: dict[str, tuple[str, ...]]  # parameter name -> allowed values


# The same as inputs.STEPS (a test checks): importing inputs here would load pydantic
# before a bad command line is turned away.
_STEPS = ("dev-spec", "dev-plan", "dev-batches", "tasks-repair")

COMMANDS = {
    "run": _Command(
        positional=("step",),
        options={
            "--inputs": "inputs",
            "--workspace": "workspace",
            "--run-dir": "run_dir",
            "--output": "output",
            "--resume": "resume",
            "--progress": "progress",
        },
        required=(),
        choices={
            "step": _STEPS,
            "output": ("text", "json", "stream-json"),
            "progress": ("auto", "live", "plain", "none"),
        },
    ),
    "validate": _Command(
        positional=(),
        options={"--inputs": "inputs", "--step": "step", "--workspace": "workspace"},
        required=("inputs",),
        choices={"step": _STEPS},
    ),
}


def parse(args: list[str]) -> tuple[str, dict[str, str | None]] | None:
    """(command, its parameters) for a plain `run` or `validate` command line, else None."""
    if not args or args[0] not in COMMANDS:
        return None
    name, spec = args[0], COMMANDS[args[0]]
    params: dict[str, str | None] = dict.fromkeys(spec.options.values())
    seen: set[str] = set()
    positional: list[str] = []
    rest = args[1:]
    i = 0
    while i < len(rest):
        token = rest[i]
        i += 1
        if not token.startswith("-") or token == "-":
            positional.append(token)
            continue
        flag, eq, value = token.partition("=")
        key = spec.options.get(flag)
        if key is None or key in seen:
            return None
        if not eq:
            if i >= len(rest):
                return None
            value = rest[i]
            i += 1
        if value.startswith("-") and value != "-":
            return None
        seen.add(key)
        params[key] = value
    if len(positional) != len(spec.positional):
        return None
    params.update(zip(spec.positional, positional, strict=True))
    for key in spec.required:
        if params.get(key) is None:
            return None
    for key, allowed in spec.choices.items():
        if params[key] is not None and params[key] not in allowed:
            return None
    return name, params


def action(args: list[str]) -> Callable[[], int] | None:
    """The call that runs a plain `run` or `validate` command line, else None."""
    parsed = parse(args)
    if parsed is None:
        return None
    from . import actions

    name, params = parsed
    if name == "run":
        step = params.pop("step")
        assert step is not None
        return lambda: actions.run(step, **params)
    inputs = params.pop("inputs")
    assert inputs is not None
    return lambda: actions.validate(inputs, **params)
