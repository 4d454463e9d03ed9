"""Claude Code plugins' hooks (docs/hooks.md, "Plugins"): tests/data/plugins/guard is a
plugin of the published plugins' shape (`.claude-plugin/plugin.json`, `hooks/hooks.json`,
a script named through `${CLAUDE_PLUGIN_ROOT}`, state in `${CLAUDE_PLUGIN_DATA}`), run
unchanged from its own folder as a real process."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import DATA
from kit.pipeline import refusal_lines, sample_call

from orkeon_run.calls import CallContext
from orkeon_run.commands.hooks import settings_lines, trust_main
from orkeon_run.config.inputs import parse_inputs
from orkeon_run.config.pins import hook_commands, pin
from orkeon_run.errors import InputError
from orkeon_run.events import NullLog
from orkeon_run.hooks.claude import plugins
from orkeon_run.hooks.claude.settings import SettingsHooks, load_settings_hooks
from orkeon_run.ledger import Ledger
from orkeon_run.limits import BudgetLimits

PLUGIN = DATA / "plugins" / "guard"


def load(ws: Path, cfg: Path, inputs: dict[str, Any]) -> tuple[Any, list[str]]:
    warnings: list[str] = []
    got = load_settings_hooks(
        parse_inputs(inputs),
        workspace=ws,
        config_dir=cfg,
        environ={},
        stdin_is_tty=False,
        warn=warnings.append,
    )
    return got, warnings


def pre_write(ws: Path, config: Any, path: str) -> Any:
    from kit.hooks import Rig

    rig = Rig(ws, {})
    hooks = SettingsHooks(config, workspace=ws, events=NullLog())
    call = sample_call(ws, "file_write", {"file_path": path, "content": "x"})
    return anyio.run(hooks.pre_tool, rig.ctx, call, "call-1", Ledger(BudgetLimits()))


def seen(cfg: Path) -> list[dict[str, Any]]:
    [data] = (cfg / "plugins" / "data").iterdir()
    return [json.loads(line) for line in (data / "seen.jsonl").read_text().splitlines()]


def test_plugin_hook_runs_from_its_folder_with_root_and_data(
    workspace: Path, tmp_path: Path
) -> None:
    """'their hooks run with `CLAUDE_PLUGIN_ROOT` (and `CLAUDE_PLUGIN_DATA`, a folder per
    plugin that lasts across runs, outside the workspace) set and substituted in
    commands'."""
    cfg = tmp_path / "cfg"
    config, warnings = load(workspace, cfg, {"plugins": [str(PLUGIN)]})
    assert warnings == []
    [command] = [h.command for g in config["PreToolUse"] for h in g.hooks]
    assert command == f"python3 {shlex.quote(str(PLUGIN.resolve()))}/hooks/guard.py"
    v = pre_write(workspace, config, "secrets/key.pem")
    assert refusal_lines(v) == [
        f"[PreToolUse hook ({command}) blocked the call: "
        "suite-guard: files under secrets/ are not written by agents]"
    ]
    assert refusal_lines(pre_write(workspace, config, "src/a.py")) == []
    [first, _] = seen(cfg)
    assert first["root"] == str(PLUGIN.resolve())
    assert first["path"] == str(workspace / "secrets/key.pem")
    # A second run finds what the first one left: the data folder lasts.
    config, _ = load(workspace, cfg, {"plugins": [str(PLUGIN)]})
    pre_write(workspace, config, "src/b.py")
    assert [e["path"] for e in seen(cfg)][-1] == str(workspace / "src/b.py")
    [data] = (cfg / "plugins" / "data").iterdir()
    assert data.name.startswith("suite-guard-") and workspace not in data.parents


def test_plugin_hooks_come_after_every_settings_source(workspace: Path, tmp_path: Path) -> None:
    """'merged after the settings files' hooks in Claude Code's order'; `orkeon hooks list`
    shows each hook's plugin."""
    team = tmp_path / "team.json"
    group = {"matcher": "Write", "hooks": [{"type": "command", "command": "echo team"}]}
    team.write_text(json.dumps({"hooks": {"PreToolUse": [group]}}))
    inline = {"PreToolUse": [{"hooks": [{"type": "command", "command": "echo inline"}]}]}
    config, _ = load(
        workspace,
        tmp_path / "cfg",
        {"plugins": [str(PLUGIN)], "settings": [str(team)], "hooks": inline},
    )
    lines = settings_lines(config)
    assert lines == [
        "PreToolUse [Write] echo team",
        "PreToolUse [*] echo inline",
        # The folder as the shell reads it: quoted when the checkout's path holds a space.
        f"PreToolUse [Edit|Write|MultiEdit] python3 {shlex.quote(str(PLUGIN.resolve()))}"
        "/hooks/guard.py "
        f"(plugin suite-guard: {PLUGIN.resolve()})",
    ]


def test_plugin_inside_the_workspace_counts_once_trusted(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """'A plugin inside the workspace counts only once trusted (same trust digest as
    settings, covering the plugin's files)'; its script is pinned by content."""
    cfg = tmp_path / "cfg"
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(cfg))
    inside = workspace / "tools" / "guard"
    shutil.copytree(PLUGIN, inside)
    config, warnings = load(workspace, cfg, {"plugins": ["tools/guard"]})
    assert config == {}
    [warning] = warnings
    assert "plugins[0]" in warning and "not trusted" in warning
    assert "orkeon hooks trust --workspace" in warning

    assert trust_main(str(workspace)) == 0
    assert f"trusted {inside}" in capsys.readouterr().out
    config, warnings = load(workspace, cfg, {"plugins": ["tools/guard"]})
    assert warnings == [] and list(config) == ["PreToolUse"]
    pins = pin(workspace, hook_commands([], config), "")
    assert "tools/guard/hooks/guard.py" in pins.paths
    # The run's pins hold: the plugin's script changed during the run is not run, and a
    # PreToolUse hook that cannot run refuses the call (config/pins.py).
    (inside / "hooks" / "guard.py").write_text("import sys; sys.exit(0)\n")
    hooks = SettingsHooks(config, workspace=workspace, events=NullLog(), pins=pins)
    ctx = CallContext(step="dev-batches", role="b1/api", workspace=workspace)
    call = sample_call(workspace, "file_write", {"file_path": "src/a.py", "content": "x"})
    v = anyio.run(hooks.pre_tool, ctx, call, "call-1", Ledger(BudgetLimits()))
    [line] = refusal_lines(v)
    assert "could not run: tools/guard/hooks/guard.py changed since the run started" in line

    # Any file of the plugin changed: untrusted again.
    config, warnings = load(workspace, cfg, {"plugins": ["tools/guard"]})
    assert config == {} and "not trusted" in warnings[0]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "plugins[0]: no such folder: "),
        (lambda p: p.mkdir(), "plugins[0]: {p}/hooks/hooks.json: no such file"),
        (
            lambda p: (p / "hooks").mkdir(parents=True) or (p / "hooks/hooks.json").write_text("{"),
            "plugins[0]: {p}/hooks/hooks.json: not JSON",
        ),
        (
            lambda p: (
                (p / "hooks").mkdir(parents=True)
                or (p / "hooks/hooks.json").write_text('{"hooks": {"Stop": [{"hooks": [{}]}]}}')
            ),
            "plugins[0]: {p}/hooks/hooks.json: hooks.Stop[0].hooks[0].type: Field required",
        ),
    ],
)
def test_bad_plugin_names_the_file(
    tmp_path: Path, workspace: Path, make: Any, message: str
) -> None:
    """'a plugin folder without `hooks/hooks.json` or with invalid JSON: exit 2 naming the
    field or file (with the plugin's path), nothing run'."""
    p = tmp_path / "plug"
    make(p)
    with pytest.raises(InputError) as err:
        load(workspace, tmp_path / "cfg", {"plugins": [str(p)]})
    [problem] = err.value.problems
    assert problem.startswith(message.format(p=p)), problem
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    "root", ["/opt/plugins/guard", "/tmp/a b/guard", '/tmp/it\'s "x" $HOME `id`\\z']
)
@pytest.mark.parametrize(
    "command",
    [
        'printf "%s|" ${CLAUDE_PLUGIN_ROOT}/hooks/x.py $CLAUDE_PLUGIN_DATA',
        'printf "%s|" "${CLAUDE_PLUGIN_ROOT}/hooks/x.py" "$CLAUDE_PLUGIN_DATA"',
        "printf \"%s|\" '${CLAUDE_PLUGIN_ROOT}/hooks/x.py' '$CLAUDE_PLUGIN_DATA'",
    ],
)
def test_a_substituted_folder_is_one_word_wherever_it_stands(root: str, command: str) -> None:
    """docs/hooks.md, "Plugins": "`${CLAUDE_PLUGIN_ROOT}` (or `$CLAUDE_PLUGIN_ROOT`)
    becomes the plugin's folder": the shell reads it as that one path, unquoted (as the
    published plugins write it), in double or in single quotes, whatever the path holds
    (a space, quotes, `$`, a backquote); a plain path is put in as it is."""
    values = {"CLAUDE_PLUGIN_ROOT": root, "CLAUDE_PLUGIN_DATA": "/var/data/guard"}
    text = plugins.substitute(command, values)
    done = subprocess.run(["sh", "-c", text], capture_output=True, text=True, check=True)
    assert done.stdout == f"{root}/hooks/x.py|/var/data/guard|"
    if root == "/opt/plugins/guard":
        assert "/opt/plugins/guard/hooks/x.py" in text
