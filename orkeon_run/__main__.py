"""`orkeon` and `python -m orkeon_run`.

`--version` answers before anything heavy is imported: CI scripts call it to probe the tool,
and a cold start should cost little more than the interpreter's own.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code (for embedding and tests)."""
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        from . import __version__

        sys.stdout.write(f"orkeon {__version__}\n")
        return 0
    from .environ import set_for_this_process

    # orkeon uses no pydantic plugin, and the search for them (every installed
    # distribution's entry points) costs 30-40 ms of every command's start.
    set_for_this_process("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _skip_pydantic_plugin_loader()
    from .fastargs import action

    call = action(args)
    if call is None:
        from .cli import run_cli

        return run_cli(args)
    from .actions import guarded

    return guarded(call, lambda exc: None)


def _skip_pydantic_plugin_loader() -> None:
    """Even with its plugins off, pydantic imports its plugin loader the first time it
    builds a model, and the loader imports importlib.metadata (with email and zipfile):
    20-30 ms of every command's start, for an answer PYDANTIC_DISABLE_PLUGINS already
    gives. A stand-in gives that answer; should a pydantic release ask the loader for
    anything else, the stand-in hands over to the real module."""
    import sys
    import types

    name = "pydantic.plugin._loader"
    if name in sys.modules:
        return
    stand_in = types.ModuleType(name)

    def get_plugins() -> tuple[()]:
        return ()

    def real_attribute(attr: str) -> object:
        import importlib

        if attr.startswith("__"):  # the import system's own questions (`__path__`)
            raise AttributeError(attr)
        del sys.modules[name]
        return getattr(importlib.import_module(name), attr)

    stand_in.get_plugins = get_plugins  # type: ignore[attr-defined]
    stand_in.__getattr__ = real_attribute  # type: ignore[method-assign]
    sys.modules[name] = stand_in


def entry() -> None:
    """The console script: run, flush, and leave without the interpreter's teardown.

    By the time a command returns, everything it promised is on disk (result.json written
    and fsynced, events.jsonl closed) or in the flushed streams; tearing down thousands of
    module objects would only add 60-140 ms to every CI step.
    """
    try:
        code = main()
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (`| head`): nothing more can be said
        code = 1
    os._exit(code)


if __name__ == "__main__":
    entry()
