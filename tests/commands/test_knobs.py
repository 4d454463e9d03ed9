"""The knobs a CI matrix turns (docs/inputs.md, "Knobs"): `--model`, `--max-usd`,
`--max-turns`, `--max-tokens`, `--max-seconds`, `--concurrency` and their `ORKEON_*`
variables, with one precedence: flags > environment > `--inputs` > settings files (the
trusted workspace's, then the user's) > the crew's defaults. Black box: `orkeon run` in
this process; what a run used is read from its run directory."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from kit import ROOT
from kit.cli import clean_environment, orkeon, run_dir, run_json
from kit.steps import events, make_workspace

from orkeon_run.config.trust import record_trust


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return clean_environment(tmp_path, monkeypatch)


@pytest.fixture
def ws(tmp_path: Path, config: Path) -> Path:
    return make_workspace(tmp_path, {"README.md": "# demo\n"}, git=False)


def settings(path: Path, **run: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"Orkeon": {"Run": run}}))


EMPTY_SCRIPT = {"provider": "scripted", "script": {}}


def limits_used(
    capsys, ws: Path, doc: dict[str, Any], *flags: str, model: bool = True
) -> dict[str, Any]:
    """The limits `orkeon run dev-spec` ran under (its run.start event), and its saved
    inputs' model and concurrency. `model`: the inputs name an empty script unless they
    name a model (else a flag, a variable or a settings file must)."""
    doc = {"request": "x", **({"model": EMPTY_SCRIPT} if model else {}), **doc}
    code, result, err = run_json(capsys, "dev-spec", ws, *flags, doc=doc)
    # An empty script writes no spec: failed, after running; an unreachable provider: 4.
    assert code in (0, 1, 4), err
    rd = run_dir(ws, result)
    (start,) = [e for e in events(rd) if e["type"] == "run.start"]
    saved = json.loads((rd / "inputs.json").read_text())
    return {**start["budget"], "model": saved.get("model"), "concurrency": saved.get("concurrency")}


# Each pair of neighbouring sources, and each source alone over the crew's default.
CASES = [
    pytest.param({"flags": ["--max-usd", "1.5"], "env": {"ORKEON_MAX_USD": "2"}},
                 {"usd": 1.5}, id="flag>env"),
    pytest.param({"env": {"ORKEON_MAX_TURNS": "7"}, "inputs": {"budget": {"turns": 3}}},
                 {"turns": 7}, id="env>inputs"),
    pytest.param({"inputs": {"budget": {"seconds": 100}}, "workspace": {"MaxSeconds": 200},
                  "trusted": True}, {"seconds": 100}, id="inputs>workspace-file"),
    pytest.param({"workspace": {"MaxSeconds": 200}, "user": {"MaxSeconds": 300},
                  "trusted": True}, {"seconds": 200}, id="workspace-file>user-file"),
    pytest.param({"workspace": {"MaxSeconds": 200}, "user": {"MaxSeconds": 300}},
                 {"seconds": 300}, id="untrusted-workspace-file-ignored"),
    pytest.param({"user": {"maxseconds": 300, "MAXTOKENS": 5000}},
                 {"seconds": 300, "tokens": 5000}, id="user-file>crew"),
    pytest.param({}, {"seconds": 1800, "turns": None, "tokens": None, "usd": None},
                 id="crew-default"),
    pytest.param({"inputs": {"budget": {"usd": 5}}, "user": {"MaxTurns": 9}},
                 {"usd": 5, "turns": 9, "seconds": 1800}, id="each-limit-from-its-own-source"),
    pytest.param({"inputs": {"budget": {"seconds": None}}, "user": {"MaxSeconds": 300}},
                 {"seconds": None}, id="inputs-null-is-no-limit"),
    pytest.param({"env": {"ORKEON_MAX_SECONDS": "none"}}, {"seconds": None},
                 id="env-none-is-no-limit"),
    pytest.param({"flags": ["--max-seconds", "60"], "env": {"ORKEON_MAX_SECONDS": ""}},
                 {"seconds": 60}, id="empty-variable-not-given"),
    pytest.param({"flags": ["--concurrency", "3"], "env": {"ORKEON_CONCURRENCY": "5"},
                  "user": {"Concurrency": 2}}, {"concurrency": 3}, id="concurrency-flag"),
    pytest.param({"user": {"Concurrency": 2}}, {"concurrency": 2}, id="concurrency-file"),
    pytest.param({"inputs": {"concurrency": 6}, "user": {"Concurrency": 2}},
                 {"concurrency": 6}, id="concurrency-inputs>file"),
    pytest.param({"flags": ["--model", "scripted:flag.json"],
                  "env": {"ORKEON_MODEL": "scripted:env.json"}},
                 {"model": {"provider": "scripted", "script": "flag.json"}}, id="model-flag>env"),
    pytest.param({"env": {"ORKEON_MODEL": "scripted:env.json"},
                  "inputs": {"model": {"provider": "scripted", "script": {}}}},
                 {"model": {"provider": "scripted", "script": "env.json"}}, id="model-env>inputs"),
    pytest.param({"inputs": {"model": {"provider": "scripted", "script": "inputs.json"}},
                  "user": {"Model": "scripted:file.json"}},
                 {"model": {"provider": "scripted", "script": "inputs.json"}},
                 id="model-inputs>file"),
    pytest.param({"user": {"Model": "scripted:file.json"}},
                 {"model": {"provider": "scripted", "script": "file.json"}}, id="model-file"),
]  # fmt: skip


@pytest.mark.parametrize(("given", "expected"), CASES)
def test_precedence(given, expected, ws, config, tmp_path, capsys, monkeypatch):
    for name in ("flag.json", "env.json", "inputs.json", "file.json"):
        (tmp_path / name).write_text("{}")  # scripts, relative to the current directory
    if "workspace" in given:
        settings(ws / ".orkeon" / "settings.json", **given["workspace"])
        if given.get("trusted"):
            record_trust(ws, config_dir=config)
    if "user" in given:
        settings(config / "settings.json", **given["user"])
    for name, value in given.get("env", {}).items():
        monkeypatch.setenv(name, value)
    inputs = given.get("inputs", {})
    used = limits_used(capsys, ws, inputs, *given.get("flags", []), model="model" not in expected)
    assert {k: used[k] for k in expected} == expected


def test_flags_win_on_resume_and_the_run_keeps_what_it_used(ws, capsys, monkeypatch):
    """What a flag or variable gave is written into the run's inputs.json, so a --resume
    runs with it; given again, it wins again."""
    monkeypatch.setenv("ORKEON_MAX_TURNS", "6")
    doc = {"request": "x", "model": EMPTY_SCRIPT}
    code, result, _ = run_json(capsys, "dev-spec", ws, "--max-usd", "2", doc=doc)
    assert code == 1  # the empty script writes no spec
    rd = run_dir(ws, result)
    saved = json.loads((rd / "inputs.json").read_text())
    assert saved["budget"] == {"usd": 2.0, "turns": 6}
    monkeypatch.delenv("ORKEON_MAX_TURNS")
    argv = ["run", "dev-spec", "--resume", str(rd), "--output", "json", "--progress", "none"]
    orkeon(capsys, *argv, "--max-seconds", "90")
    starts = [e["budget"] for e in events(rd) if e["type"] == "run.start"]
    assert starts[-1] == {"seconds": 90.0, "turns": 6, "tokens": None, "usd": 2.0,
                          "idle_seconds": 600.0, "stop_blocks": 8}  # fmt: skip


def test_a_model_flag_keeps_the_inputs_connection_settings_not_its_facts(ws, capsys, monkeypatch):
    """`--model openai:NAME` over an openai model in --inputs keeps where and how to reach
    it (base_url, api_key_env, retries), not what was said of the other model (its price,
    context window). A closed port on 127.0.0.1: the provider fails at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends
    monkeypatch.setenv("LOCAL_KEY", "k")
    model = {"provider": "openai", "model": "small", "base_url": f"http://127.0.0.1:{port}/v1",
             "api_key_env": "LOCAL_KEY", "max_retries": 0, "context_tokens": 4096,
             "price": {"input_per_mtok": 1, "output_per_mtok": 2}}  # fmt: skip
    used = limits_used(capsys, ws, {"model": model}, "--model", "openai:qwen2.5-coder:32b")
    assert used["model"] == {"provider": "openai", "model": "qwen2.5-coder:32b",
                             "base_url": f"http://127.0.0.1:{port}/v1",
                             "api_key_env": "LOCAL_KEY", "max_retries": 0}  # fmt: skip
    # Another provider: nothing of the inputs' model carries over.
    (ws.parent / "s.json").write_text("{}")
    monkeypatch.setenv("ORKEON_MODEL", "scripted:s.json")
    used = limits_used(capsys, ws, {"model": model})
    assert used["model"] == {"provider": "scripted", "script": "s.json"}


BAD = [
    (["--max-usd", "abc"], {}, "orkeon: --max-usd: Input should be a valid number"),
    (["--max-usd", "0"], {}, "orkeon: --max-usd: Input should be greater than 0"),
    (["--max-turns", "1.5"], {}, "orkeon: --max-turns: Input should be a valid integer"),
    (["--concurrency", "65"], {}, "orkeon: --concurrency: Input should be less than or equal to 64"),
    (["--concurrency", "none"], {}, "orkeon: --concurrency: Input should be a valid integer"),
    (["--model", "gpt-4o"], {}, "orkeon: --model: 'gpt-4o' is not PROVIDER:NAME (like "),
    (["--model", "openai:"], {}, "orkeon: --model: 'openai:' is not PROVIDER:NAME"),
    ([], {"ORKEON_MAX_SECONDS": "-1"},
     "orkeon: environment variable ORKEON_MAX_SECONDS: Input should be greater than 0"),
    ([], {"ORKEON_MODEL": "acme:x"}, "orkeon: environment variable ORKEON_MODEL: 'acme:x' is not"),
    ([], {"ORKEON_MAX_TOKENS": "lots"},
     "orkeon: environment variable ORKEON_MAX_TOKENS: Input should be a valid integer"),
]  # fmt: skip


@pytest.mark.parametrize(("flags", "variables", "line"), BAD)
def test_a_bad_value_names_its_flag_or_variable_and_nothing_runs(
    flags, variables, line, ws, capsys, monkeypatch
):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    argv = ["run", "dev-spec", "--workspace", str(ws), "--inputs", '{"request": "x"}', *flags]
    code, out, err = orkeon(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(line) and err.count("\n") == 1, err
    assert not (ws / ".orkeon" / "runs").exists()


def test_a_bad_value_in_a_settings_file_names_the_file_and_key(ws, config, capsys):
    settings(config / "settings.json", MaxUsd="cheap")
    code, _, err = orkeon(capsys, "validate", "--inputs", "{}", "--workspace", str(ws))
    assert code == 2
    assert err == (
        f"orkeon: {config / 'settings.json'}: Orkeon:Run:MaxUsd: Input should be a valid "
        "number, unable to parse string as a number\n"
    )
    # A file the inputs outrank is still checked: a broken setting never waits for the
    # day it would be used.
    code, _, err = orkeon(capsys, "validate", "--inputs", '{"budget": {"usd": 1}}',
                          "--workspace", str(ws))  # fmt: skip
    assert code == 2 and "Orkeon:Run:MaxUsd" in err


def test_validate_reads_the_variables_too(ws, capsys, monkeypatch):
    monkeypatch.setenv("ORKEON_CONCURRENCY", "0")
    code, _, err = orkeon(capsys, "validate", "--inputs", "{}", "--workspace", str(ws))
    assert code == 2
    assert err == (
        "orkeon: environment variable ORKEON_CONCURRENCY: Input should be greater than or "
        "equal to 1\n"
    )


def test_a_limit_the_inputs_leave_out_is_the_crews_own(ws, capsys):
    """A workspace's crew says 60 s and 5 turns; the inputs give only `usd`: the run has
    all three (the inputs' `budget` no longer replaces the crew's whole)."""
    from orkeon_run.config.trust import record_crews_trust

    crews = ws / ".orkeon" / "crews"
    crews.mkdir(parents=True)
    builtin = (ROOT / "crews" / "dev-spec.toml").read_text()
    (crews / "dev-spec.toml").write_text(
        builtin.replace("[budget]\nseconds = 1800", "[budget]\nseconds = 60\nturns = 5")
    )
    record_crews_trust(ws)
    used = limits_used(capsys, ws, {"budget": {"usd": 3}})
    assert {k: used[k] for k in ("seconds", "turns", "usd")} == {
        "seconds": 60,
        "turns": 5,
        "usd": 3,
    }
