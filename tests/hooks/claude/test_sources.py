"""Where settings-shape hooks come from and how they merge (issue 4 "Sources"; Claude
Code's hooks contract, docs/hooks.md "Sources"), and bad configuration (exit 2
naming the file and the field)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orkeon_run.config.inputs import parse_inputs
from orkeon_run.config.trust import record_trust
from orkeon_run.errors import EXIT_USAGE, InputError
from orkeon_run.hooks.claude.settings import load_settings_hooks


def settings(*commands: str, event: str = "PreToolUse", matcher: str | None = None) -> dict:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": c} for c in commands]}
    if matcher:
        group["matcher"] = matcher
    return {"hooks": {event: [group]}}


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def load(ws: Path, cfg: Path, inputs: dict | None = None, env: dict | None = None):
    warnings: list[str] = []
    got = load_settings_hooks(
        parse_inputs(inputs or {}),
        workspace=ws,
        config_dir=cfg,
        environ=env or {},
        stdin_is_tty=False,
        warn=warnings.append,
    )
    return got, warnings


def commands(got: dict, event: str = "PreToolUse") -> list[str]:
    return [h.command for g in got.get(event, []) for h in g.hooks]


def test_sources_merge_in_order_never_overwritten(workspace: Path, tmp_path: Path) -> None:
    """'for a given event the user matchers come first, then the project matchers, and they
    all execute'; issue 4: '... then the files named in `settings` in their order, then the
    `hooks` object of `--inputs`'."""
    cfg = tmp_path / "cfg"
    write(cfg / "settings.json", settings("user"))
    write(workspace / ".orkeon" / "settings.json", settings("project"))
    record_trust(workspace, config_dir=cfg)
    write(workspace / ".claude" / "settings.json", {**settings("claude"), "permissions": {}})
    write(tmp_path / "team.json", settings("team"))
    inputs = {
        "settings": [".claude/settings.json", str(tmp_path / "team.json")],
        "hooks": settings("inputs")["hooks"],
    }
    got, warnings = load(workspace, cfg, inputs)
    assert commands(got) == ["user", "project", "claude", "team", "inputs"]
    assert warnings == []


def test_user_file_from_config_dir_variable(workspace: Path, tmp_path: Path) -> None:
    """'Override the config directory with MATTERAI_CONFIG_DIR' (here ORKEON_CONFIG_DIR)."""
    cfg = tmp_path / "elsewhere"
    write(cfg / "settings.json", settings("user", event="Stop"))
    got = load_settings_hooks(
        parse_inputs({}),
        workspace=workspace,
        environ={"ORKEON_CONFIG_DIR": str(cfg)},
        stdin_is_tty=False,
        warn=lambda _: None,
    )
    assert commands(got, "Stop") == ["user"]


def test_inputs_hooks_and_settings_files_are_trusted(workspace: Path, tmp_path: Path) -> None:
    """Issue 4: 'Hooks named by the caller in `--inputs` are trusted' — even the project's
    own file, named in `settings`."""
    write(workspace / ".orkeon" / "settings.json", settings("project"))
    got, warnings = load(workspace, tmp_path / "cfg", {"settings": [".orkeon/settings.json"]})
    assert commands(got) == ["project"]
    assert len(warnings) == 1 and "not trusted" in warnings[0]


def test_no_sources_no_hooks(workspace: Path, tmp_path: Path) -> None:
    assert load(workspace, tmp_path / "cfg") == ({}, [])
    write(workspace / ".orkeon" / "settings.json", {"Orkeon": {"Tools": {}}})
    assert load(workspace, tmp_path / "cfg") == ({}, [])


def test_unknown_event_is_ignored_with_a_warning(workspace: Path, tmp_path: Path) -> None:
    """'Unknown names are ignored.' the contract: 'other names ignored with a warning'."""
    inputs = {
        "hooks": {
            "PermissionRequest": [{"hooks": [{"type": "command", "command": "x"}]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": "y"}]}],
        }
    }
    got, warnings = load(workspace, tmp_path, inputs)
    assert list(got) == ["SubagentStop"]
    assert warnings == ["inputs: hooks.PermissionRequest: unknown event, ignored"]


def test_matchers_that_never_match_are_warned_about(workspace: Path, tmp_path: Path) -> None:
    """'`matcher` on a no-match-field event (e.g. a matcher on Stop) — it will never match';
    'Wrong tool names' — a matcher that matches no tool is most likely a typo."""
    inputs = {
        "hooks": {
            "Stop": [{"matcher": "x", "hooks": [{"type": "command", "command": "a"}]}],
            "PreToolUse": [
                {"matcher": "Bassh", "hooks": [{"type": "command", "command": "b"}]},
                {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "c"}]},
            ],
        }
    }
    _, warnings = load(workspace, tmp_path, inputs)
    assert len(warnings) == 2
    assert "hooks.Stop[0].matcher 'x'" in warnings[0] and "never runs" in warnings[0]
    assert "hooks.PreToolUse[0].matcher 'Bassh' matches no tool" in warnings[1]


def test_missing_settings_file(workspace: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load(workspace, tmp_path, {"settings": ["nope.json"]})
    assert err.value.problems == [f"settings[0]: no such file: {workspace / 'nope.json'}"]
    assert err.value.exit_code == EXIT_USAGE


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{not json", "not JSON"),
        ("[]", "must be a JSON object"),
        ({"hooks": []}, "hooks: must be an object of event names"),
        (
            {"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}},
            "hooks.PreToolUse[0].hooks[0].command: Field required",
        ),
        (
            {"hooks": {"PreToolUse": [{"hooks": [{"type": "shell", "command": "x"}]}]}},
            "hooks.PreToolUse[0].hooks[0].type: 'shell' is not a handler type",
        ),
        (
            {
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": "10"}]}]
                }
            },
            "hooks.Stop[0].hooks[0].timeout: Input should be a valid number",
        ),
        (
            {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}},
            "hooks.Stop[0].hooks[0].timeout: Input should be greater than 0",
        ),
        (
            {"hooks": {"Stop": [{"matcher": 3, "hooks": []}]}},
            "hooks.Stop[0].matcher: Input should be a valid string",
        ),
        ({"hooks": {"Stop": {"hooks": []}}}, "hooks.Stop: Input should be a valid list"),
    ],
)
def test_bad_settings_file_names_file_and_field(
    workspace: Path, tmp_path: Path, doc: Any, message: str
) -> None:
    """Issue 4: 'a settings file that is missing, not JSON, or of the wrong shape (a hook
    without `command`, a `type` other than `command`, a non-numeric `timeout`) exits 2
    naming the file and the field'."""
    path = write(tmp_path / "bad.json", doc)
    with pytest.raises(InputError) as err:
        load(workspace, tmp_path / "cfg", {"settings": [str(path)]})
    [problem] = err.value.problems
    assert problem.startswith(f"settings[0]: {path}: ")
    assert message in problem


def test_bad_user_file(workspace: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    path = write(cfg / "settings.json", {"hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}})
    with pytest.raises(InputError) as err:
        load(workspace, cfg)
    assert err.value.problems == [f"{path}: hooks.Stop[0].hooks[0].type: Field required"]


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        (
            {"hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}},
            "hooks.Stop[0].hooks[0].type: Field required",
        ),
        ("{oops", "not JSON"),
    ],
)
def test_bad_project_file_is_checked_only_when_trusted(
    workspace: Path, tmp_path: Path, doc: Any, problem: str
) -> None:
    """A project file that is not trusted is not used, so not checked: a cloned repository
    with a broken file warns instead of failing the run. Trusted, it is checked."""
    path = write(workspace / ".orkeon" / "settings.json", doc)
    got, warnings = load(workspace, tmp_path / "cfg")
    assert got == {}
    [warning] = warnings
    assert warning.startswith(str(path)) and "skipped" in warning
    with pytest.raises(InputError) as err:
        load(workspace, tmp_path / "cfg", env={"ORKEON_TRUST_PROJECT_HOOKS": "1"})
    [line] = err.value.problems
    assert line.startswith(f"{path}: ") and problem in line


def test_keys_orkeon_does_not_honour_are_named_not_ignored_silently(
    workspace: Path, tmp_path: Path
) -> None:
    """A `.claude/settings.json` brought from Claude Code often holds `permissions` (and
    `env`): orkeon reads only its `hooks`, and says so rather than seem to enforce them."""
    doc = {**settings("a"), "permissions": {"deny": ["Bash(rm *)"]}, "env": {"X": "1"}}
    path = write(tmp_path / "cc" / "settings.json", doc)
    got, warnings = load(workspace, tmp_path / "cfg", {"settings": [str(path)]})
    assert commands(got) == ["a"]
    assert warnings == [
        f"{path}: permissions: ignored: orkeon's gate rules are the inputs' `gate` (docs/inputs.md)",
        f"{path}: env: ignored: give the variables to orkeon's own environment",
    ]
