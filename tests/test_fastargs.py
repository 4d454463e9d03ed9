"""The fast path for `orkeon run` and `orkeon validate` (fastargs.py) must give the exact
call the typer app gives, and hand everything else to typer."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orkeon_run import actions, cli, fastargs
from orkeon_run.__main__ import main
from orkeon_run.vocabulary import STEPS


def typer_call(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[str, dict[str, Any]] | None:
    """The call the typer app makes for `argv`, or None when it refuses the command line."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def fake_run(step: str, inputs: str | None, **kw: Any) -> int:
        seen.append(("run", {"step": step, "inputs": inputs, **kw}))
        return 0

    def fake_validate(inputs: str, **kw: Any) -> int:
        seen.append(("validate", {"inputs": inputs, **kw}))
        return 0

    monkeypatch.setattr(actions, "run", fake_run)
    monkeypatch.setattr(actions, "validate", fake_validate)
    code = cli.run_cli(argv)
    monkeypatch.undo()
    if not seen:
        assert code != 0
        return None
    assert code == 0
    return seen[0]


def fast_call(argv: list[str]) -> tuple[str, dict[str, Any]] | None:
    parsed = fastargs.parse(argv)
    if parsed is None:
        return None
    name, params = parsed
    return name, dict(params)


PLAIN = [
    ["run", "dev-batches", "--inputs", "{}"],
    ["run", "--inputs", "@in.json", "dev-spec"],
    ["run", "dev-plan", "--inputs=-", "--output", "stream-json"],
    ["run", "tasks-repair", "--resume", "runs/1", "--output=json"],
    ["run", "dev-batches", "--inputs", "", "--workspace", "ws", "--run-dir", "r d"],
    ["run", "dev-batches", "--inputs", "x=y", "--workspace=a=b"],
    ["validate", "--inputs", "@in.json"],
    ["validate", "--inputs", "{}", "--step", "dev-plan", "--workspace", "."],
    ["validate", "--inputs=-"],
]

DECLINED = [
    [],
    ["--version"],
    ["run"],
    ["run", "--help"],
    ["validate", "--help"],
    ["validate"],
    ["run", "dev-batches", "--inputs"],
    ["run", "dev-batches", "--inputs", "{}", "--inputs", "{}"],
    ["run", "dev-batches", "--inputs", "--output"],
    ["run", "dev-batches", "--inputs", "{}", "--output", "yaml"],
    ["run", "dev-batch", "--inputs", "{}"],
    ["run", "dev-batches", "dev-plan", "--inputs", "{}"],
    ["run", "dev-batches", "--", "--inputs"],
    ["run", "dev-batches", "--input", "{}"],
    ["run", "dev-batches", "-i", "{}"],
    ["validate", "--inputs", "{}", "--step", "Dev-Plan"],
    ["validate", "--inputs", "{}", "extra"],
    ["hooks", "list", "--inputs", "{}"],
    ["schema", "inputs"],
]


def test_steps_are_the_inputs_steps() -> None:
    assert fastargs.COMMANDS["run"].choices["step"] == STEPS
    assert fastargs.COMMANDS["validate"].choices["step"] == STEPS


@pytest.mark.parametrize("argv", PLAIN, ids=[" ".join(a) for a in PLAIN])
def test_a_plain_command_line_is_parsed_as_typer_parses_it(argv, monkeypatch) -> None:
    fast = fast_call(argv)
    assert fast is not None, "the fast path should take this command line"
    assert fast == typer_call(argv, monkeypatch)


@pytest.mark.parametrize("argv", DECLINED, ids=[" ".join(a) or "(none)" for a in DECLINED])
def test_everything_else_goes_to_typer(argv) -> None:
    assert fastargs.parse(argv) is None


TOKENS = st.sampled_from(
    ["run", "validate", "dev-spec", "dev-batches", "tasks-repair", "--inputs", "--step",
     "--workspace", "--run-dir", "--output", "--resume", "json", "text", "stream-json",
     "-", "--", "-x", "{}", "@f", "", "--inputs=a", "--output=json", "--step=dev-plan",
     "--help", "é", "a b", "--inputs=", "--step=", "--output="]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(TOKENS, max_size=7))
def test_whenever_the_fast_path_answers_typer_agrees(argv: list[str]) -> None:
    fast = fast_call(argv)
    if fast is None:
        return
    with pytest.MonkeyPatch.context() as mp:
        assert typer_call(argv, mp) == fast, argv


def test_a_bad_command_line_still_gets_typers_one_line(capsys) -> None:
    assert main(["run", "dev-batches", "--inputs", "{}", "--output", "yaml"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("orkeon: ") and "'yaml' is not one of" in err and "\n" not in err


def test_validate_does_not_import_typer(tmp_path) -> None:
    """issue 7: "import lazily what a command does not need (typer, the SDKs)"; nor
    importlib.metadata, which pydantic's plugin loader would import for nothing."""
    doc = json.dumps({"model": {"provider": "scripted", "script": str(tmp_path / "s.json")}})
    (tmp_path / "s.json").write_text("{}")
    code = (
        "import sys; from orkeon_run.__main__ import main; "
        f"rc = main(['validate', '--inputs', {doc!r}]); "
        "print(rc, *(m in sys.modules for m in ('typer', 'click', 'importlib.metadata')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.splitlines()[-1] == "0 False False False", out.stderr


def test_the_plugin_loader_stand_in_hands_over_to_the_real_one() -> None:
    """Should pydantic ask its plugin loader for more than `get_plugins`, it gets the real
    module's answer, and the real module takes its place."""
    code = (
        "import sys; from orkeon_run.__main__ import _skip_pydantic_plugin_loader as skip; "
        "skip(); import pydantic; "
        "from pydantic.plugin import _loader; "
        "print(list(_loader.get_plugins()), 'importlib.metadata' in sys.modules, "
        "_loader.PYDANTIC_ENTRY_POINT_GROUP, 'importlib.metadata' in sys.modules, "
        "getattr(sys.modules['pydantic.plugin._loader'], '__file__', None) is not None)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["[]", "False", "pydantic", "True", "True"], out.stderr


# The same endings through both parsers: `validate --inputs -` is plain (the fast path);
# with the option given twice, typer parses it (it takes the last value, as the fast path
# would, but repeated options are typer's to handle).
BOTH = {"fast": ["--inputs", "-"], "typer": ["--inputs", "{}", "--inputs", "-"]}


@pytest.mark.parametrize("path", ["fast", "typer"])
def test_ctrl_c_before_the_run_starts_is_exit_130_and_one_line(path: str, tmp_path) -> None:
    """INTERFACE section 1: 130 interrupted. Ctrl-C while orkeon waits for its inputs on
    stdin (no run, so no result yet)."""
    import os
    import signal
    import time

    argv = [sys.executable, "-m", "orkeon_run", "validate", *BOTH[path]]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    time.sleep(1.0)  # past the imports, blocked reading stdin
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert err.splitlines()[-1:] == ["orkeon: interrupted"], err


@pytest.mark.parametrize("path", ["fast", "typer"])
def test_a_reader_that_goes_away_is_exit_1_and_no_internal_error(path: str, tmp_path) -> None:
    """`orkeon validate ... | head -c 3`: the pipe closes before everything is written."""
    script = tmp_path / "s.json"
    script.write_text("{}")
    doc = json.dumps({"model": {"provider": "scripted", "script": str(script)}})
    argv = [sys.executable, "-m", "orkeon_run", "validate", *BOTH[path]]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path
    )
    assert proc.stdout is not None and proc.stdin is not None
    proc.stdout.close()  # nobody reads what it prints
    _, err = proc.communicate(input=doc.encode(), timeout=30)
    assert proc.returncode == 1
    assert b"internal error" not in err and b"Traceback" not in err, err
