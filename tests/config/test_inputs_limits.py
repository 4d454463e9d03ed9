"""Bad input is exit 2, naming the field (docs/inputs.md, "Limits"): `--inputs` that is not
a regular file, larger than 16 MiB or nested deeper than 64 levels, and an empty
`api_key_env`, through the real command."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kit.process import orkeon

MiB = 1 << 20


def nested(depth: int) -> str:
    """A valid inputs document, as text, whose scripted tool input makes it nest `depth`
    levels in all (document, model, script, the role's list, entry, calls, call, input:
    8, then the rest)."""
    inner = '{"a":' * (depth - 8) + '"x"' + "}" * (depth - 8)
    call = '{"tool":"file_read","input":{"file_path":"x","deep":' + inner + "}}"
    return '{"model":{"provider":"scripted","script":{"r":[{"tool_calls":[' + call + "]}]}}}"


def depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize("command", ["validate", "run dev-spec"])
def test_a_device_or_a_fifo_is_refused_before_reading(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "inputs.fifo"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer; reading /dev/zero, forever
    for source in ("/dev/zero", str(fifo), str(tmp_path)):
        proc = orkeon(*command.split(), "--inputs", f"@{source}", cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
        assert proc.stderr == f"orkeon: inputs: not a regular file: {source}\n"


def test_more_than_16_mib_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"request": "x" * (16 * MiB)}))
    proc = orkeon("validate", "--inputs", f"@{big}", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, f"orkeon: inputs: {big} holds more than 16 MiB\n")
    with open("/dev/zero", "rb") as zero:
        proc = orkeon("validate", "--inputs", "-", stdin=zero.fileno(), cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, "orkeon: inputs (stdin): more than 16 MiB\n")
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"request": "x" * (16 * MiB - 20)}))  # just under: read and checked
    assert orkeon("validate", "--inputs", f"@{ok}", cwd=tmp_path).returncode == 0


def test_a_document_nested_too_deep_is_an_input_error(tmp_path: Path) -> None:
    assert depth(json.loads(nested(64))) == 64
    for text, ok in ((nested(64), True), (nested(65), False), (nested(1000), False)):
        path = tmp_path / "doc.json"
        path.write_text(text)
        proc = orkeon("validate", "--inputs", f"@{path}", cwd=tmp_path)
        if ok:
            assert proc.returncode == 0, proc.stderr
        else:
            assert (proc.returncode, proc.stderr) == (
                2,
                f"orkeon: inputs ({path}): nested deeper than 64 levels\n",
            )
    # Deeper than Python's JSON decoder goes, inline: no RecursionError either.
    proc = orkeon(
        "run", "dev-spec", "--inputs", "[" * 60_000 + "]" * 60_000, cwd=tmp_path, timeout=30
    )
    assert (proc.returncode, proc.stderr) == (2, "orkeon: inputs: nested deeper than 64 levels\n")


def test_a_plan_file_nested_too_deep_names_the_plan(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text("[" * 5000 + "]" * 5000)
    proc = orkeon("validate", "--step", "dev-batches", "--workspace", str(tmp_path),
                  "--inputs", json.dumps({"plan": "plan.json", "model": {"provider": "scripted"}}), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == f"orkeon: plan ({tmp_path / 'plan.json'}): nested deeper than 64 levels\n"


@pytest.mark.parametrize("name", ["", "A=B"])
def test_an_api_key_env_that_names_no_variable(tmp_path: Path, name: str) -> None:
    """`"api_key_env": ""` passed validate and crashed run."""
    doc = {"request": "r", "model": {"provider": "openai", "model": "m", "api_key_env": name}}
    for command in ("validate", "run dev-spec"):
        proc = orkeon(*command.split(), "--inputs", json.dumps(doc), cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == (
            "orkeon: model.api_key_env: must name an environment variable (not empty, no '=')\n"
        )
    assert not (tmp_path / ".orkeon").exists()
